-- Friend relationships (Nakama's user_edge): one row per direction. state: 0 friend, 1 invite
-- sent, 2 invite received, 3 blocked. position orders a listing within a state (creation time,
-- ms); the destination id breaks ties, so the listing index is (source, state, position, dest).
CREATE TABLE user_edge (
    source_id      uuid    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    destination_id uuid    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state          integer NOT NULL CHECK (state BETWEEN 0 AND 3),
    position       bigint  NOT NULL,
    update_time    bigint  NOT NULL,
    metadata       text    NOT NULL DEFAULT '{}',
    PRIMARY KEY (source_id, destination_id)
);
CREATE INDEX user_edge_list_idx ON user_edge (source_id, state, position, destination_id);
-- The cascade on a deleted destination looks edges up by destination.
CREATE INDEX user_edge_destination_idx ON user_edge (destination_id);

-- How many of p_ids (existing users) have no edge from p_user yet: the edges a request adds.
CREATE FUNCTION metafi_friends_new_edges(p_user uuid, p_ids uuid[]) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM unnest(p_ids) AS i(uid)
    WHERE NOT EXISTS (SELECT 1 FROM user_edge e
                      WHERE e.source_id = p_user AND e.destination_id = i.uid)
      AND EXISTS (SELECT 1 FROM users u WHERE u.id = i.uid)
$$;

-- Adds each of p_ids (distinct) as p_user's friend: accepts their invite or invites them.
-- One row per id: outcome 0 unchanged, 1 invited, 2 accepted; or one row (NULL, -1) when the
-- new invites would give p_user more than p_max edges (nothing written).
CREATE FUNCTION metafi_friends_add(
    p_user uuid, p_ids uuid[], p_metadata text, p_now bigint, p_max bigint
) RETURNS TABLE (friend_id uuid, outcome integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
    v_mine integer;
    v_theirs integer;
BEGIN
    IF (SELECT count(*) FROM user_edge e WHERE e.source_id = p_user)
       + metafi_friends_new_edges(p_user, p_ids) > p_max THEN
        friend_id := NULL;
        outcome := -1;
        RETURN NEXT;
        RETURN;
    END IF;
    FOREACH v_id IN ARRAY p_ids LOOP
        v_mine := NULL;
        v_theirs := NULL;
        SELECT e.state INTO v_mine FROM user_edge e
        WHERE e.source_id = p_user AND e.destination_id = v_id;
        SELECT e.state INTO v_theirs FROM user_edge e
        WHERE e.source_id = v_id AND e.destination_id = p_user;
        friend_id := v_id;
        outcome := 0;
        IF v_mine = 2 AND v_theirs = 1 THEN
            UPDATE user_edge e SET state = 0, update_time = p_now,
                metadata = (e.metadata::jsonb || p_metadata::jsonb)::text
            WHERE e.source_id = p_user AND e.destination_id = v_id;
            UPDATE user_edge e SET state = 0, update_time = p_now
            WHERE e.source_id = v_id AND e.destination_id = p_user;
            outcome := 2;
        ELSIF v_mine IS NULL AND v_theirs IS NULL
              AND EXISTS (SELECT 1 FROM users u WHERE u.id = v_id)
              AND (SELECT count(*) FROM user_edge e WHERE e.source_id = v_id) < p_max THEN
            INSERT INTO user_edge (source_id, destination_id, state, position, update_time, metadata)
            VALUES (p_user, v_id, 1, p_now, p_now, p_metadata),
                   (v_id, p_user, 2, p_now, p_now, '{}');
            outcome := 1;
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- Blocks each of p_ids (distinct, existing users); false when new block edges would give
-- p_user more than p_max edges (nothing written).
CREATE FUNCTION metafi_friends_block(
    p_user uuid, p_ids uuid[], p_now bigint, p_max bigint
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
BEGIN
    IF (SELECT count(*) FROM user_edge e WHERE e.source_id = p_user)
       + metafi_friends_new_edges(p_user, p_ids) > p_max THEN
        RETURN false;
    END IF;
    FOREACH v_id IN ARRAY p_ids LOOP
        UPDATE user_edge e SET state = 3, update_time = p_now
        WHERE e.source_id = p_user AND e.destination_id = v_id;
        IF NOT FOUND THEN
            INSERT INTO user_edge (source_id, destination_id, state, position, update_time, metadata)
            SELECT p_user, v_id, 3, p_now, p_now, '{}'
            WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = v_id);
        END IF;
        DELETE FROM user_edge e
        WHERE e.source_id = v_id AND e.destination_id = p_user AND e.state <> 3;
    END LOOP;
    RETURN true;
END;
$$;
