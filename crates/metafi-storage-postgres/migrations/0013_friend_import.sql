-- Friends imported from a social provider (Nakama's importFacebookFriends and
-- importSteamFriends), in one statement for the group-commit writer. p_provider is the id's
-- provider ('facebook' or 'steam'), p_ids its ids of the user's friends (distinct). With
-- p_reset the user's relationships go first, except blocks either way (Nakama's
-- resetUserFriends). For each user linked to one of the ids (the importer excepted): an
-- invite either way is accepted, with {"provider": p_provider} merged into both edges'
-- metadata; no edge either way makes both edges friends when both users hold fewer than p_max
-- edges; anything else is left alone. Answers the users that became friends, in p_ids order.
CREATE FUNCTION metafi_friends_import(
    p_user uuid, p_provider text, p_ids text[], p_reset boolean, p_now bigint, p_max bigint
) RETURNS TABLE (friend_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
    v_mine integer;
    v_theirs integer;
    v_rows bigint;
    v_added bigint;
    v_meta text := json_build_object('provider', p_provider)::text;
BEGIN
    IF p_reset THEN
        DELETE FROM user_edge e WHERE e.source_id = p_user AND e.state <> 3;
        DELETE FROM user_edge e WHERE e.destination_id = p_user AND e.state <> 3;
    END IF;
    -- One branch per provider so that each uses its column's unique index.
    FOR v_id IN
        SELECT found.id FROM (
            SELECT u.id, i.n FROM unnest(p_ids) WITH ORDINALITY AS i(pid, n)
            JOIN users u ON u.facebook_id = i.pid WHERE p_provider = 'facebook'
            UNION ALL
            SELECT u.id, i.n FROM unnest(p_ids) WITH ORDINALITY AS i(pid, n)
            JOIN users u ON u.steam_id = i.pid WHERE p_provider = 'steam'
        ) AS found
        WHERE found.id <> p_user
        ORDER BY found.n
    LOOP
        v_mine := NULL;
        v_theirs := NULL;
        SELECT e.state INTO v_mine FROM user_edge e
        WHERE e.source_id = p_user AND e.destination_id = v_id;
        SELECT e.state INTO v_theirs FROM user_edge e
        WHERE e.source_id = v_id AND e.destination_id = p_user;
        friend_id := v_id;
        IF (v_mine = 1 AND v_theirs = 2) OR (v_mine = 2 AND v_theirs = 1) THEN
            UPDATE user_edge e SET state = 0, update_time = p_now,
                metadata = (e.metadata::jsonb || v_meta::jsonb)::text
            WHERE (e.source_id = p_user AND e.destination_id = v_id)
               OR (e.source_id = v_id AND e.destination_id = p_user);
            RETURN NEXT;
        ELSIF v_mine IS NULL AND v_theirs IS NULL
              AND (SELECT count(*) FROM user_edge e WHERE e.source_id = p_user) < p_max
              AND (SELECT count(*) FROM user_edge e WHERE e.source_id = v_id) < p_max THEN
            -- The edge whose source is the smaller id first, so that two users importing each
            -- other at once take the rows' locks in one order (no deadlock); a row the other
            -- import wrote meanwhile is left as it is.
            v_added := 0;
            INSERT INTO user_edge (source_id, destination_id, state, position, update_time, metadata)
            VALUES (LEAST(p_user, v_id), GREATEST(p_user, v_id), 0, p_now, p_now, v_meta)
            ON CONFLICT (source_id, destination_id) DO NOTHING;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            v_added := v_added + v_rows;
            INSERT INTO user_edge (source_id, destination_id, state, position, update_time, metadata)
            VALUES (GREATEST(p_user, v_id), LEAST(p_user, v_id), 0, p_now, p_now, v_meta)
            ON CONFLICT (source_id, destination_id) DO NOTHING;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            v_added := v_added + v_rows;
            IF v_added = 2 THEN
                RETURN NEXT;
            END IF;
        END IF;
    END LOOP;
END;
$$;
