-- Nakama's storage listing order, (read, key, user_id) within a collection, served by indexes;
-- and Nakama's delete rule: a client's delete of an object that does not exist is refused
-- (status 3), while server code deleting a missing object without a version is a no-op.
CREATE INDEX storage_list_idx ON storage (collection, read, key, user_id);
-- An owner's listing (collection and user_id fixed) walks this one in (read, key) order.
CREATE INDEX storage_owner_list_idx ON storage (collection, user_id, read, key);

CREATE OR REPLACE FUNCTION metafi_delete_objects(
    p_caller      uuid,
    p_collections text[],
    p_user_ids    uuid[],
    p_keys        text[],
    p_versions    text[]
) RETURNS TABLE (status smallint, idx integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n         integer := coalesce(array_length(p_keys, 1), 0);
    cur_ver   text;
    cur_write smallint;
BEGIN
    PERFORM 1 FROM storage s
        JOIN unnest(p_collections, p_user_ids, p_keys) AS o (c, u, k)
          ON s.collection = o.c AND s.user_id = o.u AND s.key = o.k
        ORDER BY s.collection, s.user_id, s.key
        FOR UPDATE OF s;
    FOR i IN 1 .. n LOOP
        SELECT s.version, s.write INTO cur_ver, cur_write
            FROM storage s
            WHERE s.collection = p_collections[i] AND s.user_id = p_user_ids[i] AND s.key = p_keys[i];
        IF NOT FOUND THEN
            cur_ver := NULL;
            cur_write := NULL;
        END IF;
        IF p_caller IS NOT NULL AND p_user_ids[i] <> p_caller THEN
            RETURN QUERY SELECT 2::smallint, i - 1;
            RETURN;
        END IF;
        IF cur_ver IS NULL AND p_versions[i] IS NULL AND p_caller IS NOT NULL THEN
            RETURN QUERY SELECT 3::smallint, i - 1;
            RETURN;
        END IF;
        IF cur_ver IS NULL AND p_versions[i] IS NOT NULL THEN
            RETURN QUERY SELECT 1::smallint, i - 1;
            RETURN;
        END IF;
        IF cur_ver IS NOT NULL AND p_caller IS NOT NULL AND cur_write <> 1 THEN
            RETURN QUERY SELECT 2::smallint, i - 1;
            RETURN;
        END IF;
        IF cur_ver IS NOT NULL AND p_versions[i] IS NOT NULL AND cur_ver <> p_versions[i] THEN
            RETURN QUERY SELECT 1::smallint, i - 1;
            RETURN;
        END IF;
    END LOOP;
    DELETE FROM storage s
        USING unnest(p_collections, p_user_ids, p_keys) AS o (c, u, k)
        WHERE s.collection = o.c AND s.user_id = o.u AND s.key = o.k;
    RETURN QUERY SELECT 0::smallint, 0;
END
$$;
