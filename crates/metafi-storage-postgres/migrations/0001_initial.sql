-- MetaFi schema v1 (PostgreSQL). UUIDs are native; times are bigint ms since the epoch, the
-- same integers the records carry (exact round trips, cursors compare exactly, and the SQLite
-- schema matches). Text that is ordered or compared by listings uses COLLATE "C": byte order,
-- the same on every server whatever its locale, and the same as SQLite's.

CREATE TABLE users (
    id           uuid   NOT NULL PRIMARY KEY,
    username     text   COLLATE "C" NOT NULL CONSTRAINT users_username_key UNIQUE,
    display_name text   NOT NULL DEFAULT '',
    avatar_url   text   NOT NULL DEFAULT '',
    lang_tag     text   NOT NULL DEFAULT 'en',
    location     text   NOT NULL DEFAULT '',
    timezone     text   NOT NULL DEFAULT '',
    metadata     text   NOT NULL DEFAULT '{}',
    wallet       text   NOT NULL DEFAULT '{}',
    email        text   COLLATE "C",
    password     text,
    custom_id    text   COLLATE "C",
    create_time  bigint NOT NULL,
    update_time  bigint NOT NULL,
    verify_time  bigint,
    disable_time bigint
);
-- Partial: most users have neither, and a NULL entry would cost every sign-up an index write.
CREATE UNIQUE INDEX users_email_key ON users (email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_custom_id_key ON users (custom_id) WHERE custom_id IS NOT NULL;

CREATE TABLE user_device (
    id      text COLLATE "C" NOT NULL CONSTRAINT user_device_pkey PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE
);
CREATE INDEX user_device_user_id_idx ON user_device (user_id, id);

CREATE TABLE session_revocation (
    session_id uuid   NOT NULL PRIMARY KEY,
    user_id    uuid   NOT NULL,
    expires_at bigint NOT NULL
);
CREATE INDEX session_revocation_expires_at_idx ON session_revocation (expires_at);

-- Keyed (collection, key, user_id); the primary key's column order serves the listing order
-- (user_id, key) within a collection. Values are text, not jsonb: the version is the MD5 of
-- the exact text written, and reads return that text unchanged.
CREATE TABLE storage (
    collection  text     COLLATE "C" NOT NULL,
    user_id     uuid     NOT NULL,
    key         text     COLLATE "C" NOT NULL,
    value       text     NOT NULL,
    version     text     NOT NULL,
    read        smallint NOT NULL CHECK (read BETWEEN 0 AND 2),
    write       smallint NOT NULL CHECK (write BETWEEN 0 AND 1),
    create_time bigint   NOT NULL,
    update_time bigint   NOT NULL,
    CONSTRAINT storage_pkey PRIMARY KEY (collection, user_id, key)
);
CREATE INDEX storage_user_id_idx ON storage (user_id);

CREATE TABLE message (
    id          uuid    NOT NULL PRIMARY KEY,
    channel_id  text    COLLATE "C" NOT NULL,
    code        integer NOT NULL,
    sender_id   uuid    NOT NULL,
    username    text    NOT NULL,
    content     text    NOT NULL,
    create_time bigint  NOT NULL,
    update_time bigint  NOT NULL
);
CREATE INDEX message_channel_time_idx ON message (channel_id, create_time, id);

-- A batch of storage-object writes as ONE statement, so the group-commit writer can pipeline
-- it with other requests. Nakama's rules are checked for every operation before anything is
-- written; the first refused operation is returned as (status, idx) with status 1 = version,
-- 2 = permission, and nothing is written. Otherwise one row per operation: (0, idx, created).
-- Checks: 0 = any, 1 = absent, 2 = matches p_expected. p_caller NULL = server.
CREATE FUNCTION metafi_write_objects(
    p_caller      uuid,
    p_collections text[],
    p_user_ids    uuid[],
    p_keys        text[],
    p_values      text[],
    p_versions    text[],
    p_checks      smallint[],
    p_expected    text[],
    p_reads       smallint[],
    p_writes      smallint[],
    p_now         bigint
) RETURNS TABLE (status smallint, idx integer, created bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n         integer := coalesce(array_length(p_keys, 1), 0);
    cur_ver   text;
    cur_write smallint;
    cur_time  bigint;
    existed   boolean[] := '{}';
    createds  bigint[] := '{}';
BEGIN
    -- Lock the existing rows in key order, so that concurrent batches cannot deadlock.
    PERFORM 1 FROM storage s
        JOIN unnest(p_collections, p_user_ids, p_keys) AS o (c, u, k)
          ON s.collection = o.c AND s.user_id = o.u AND s.key = o.k
        ORDER BY s.collection, s.user_id, s.key
        FOR UPDATE OF s;
    FOR i IN 1 .. n LOOP
        SELECT s.version, s.write, s.create_time INTO cur_ver, cur_write, cur_time
            FROM storage s
            WHERE s.collection = p_collections[i] AND s.user_id = p_user_ids[i] AND s.key = p_keys[i];
        IF NOT FOUND THEN
            cur_ver := NULL;
            cur_write := NULL;
            cur_time := p_now;
        END IF;
        IF p_caller IS NOT NULL AND p_user_ids[i] <> p_caller THEN
            RETURN QUERY SELECT 2::smallint, i - 1, 0::bigint;
            RETURN;
        END IF;
        IF (p_checks[i] = 1 AND cur_ver IS NOT NULL) OR (p_checks[i] = 2 AND cur_ver IS NULL) THEN
            RETURN QUERY SELECT 1::smallint, i - 1, 0::bigint;
            RETURN;
        END IF;
        IF cur_ver IS NOT NULL AND p_caller IS NOT NULL AND cur_write <> 1 THEN
            RETURN QUERY SELECT 2::smallint, i - 1, 0::bigint;
            RETURN;
        END IF;
        IF p_checks[i] = 2 AND cur_ver <> p_expected[i] THEN
            RETURN QUERY SELECT 1::smallint, i - 1, 0::bigint;
            RETURN;
        END IF;
        existed := existed || (cur_ver IS NOT NULL);
        createds := createds || cur_time;
    END LOOP;
    FOR i IN 1 .. n LOOP
        IF existed[i] THEN
            UPDATE storage SET value = p_values[i], version = p_versions[i], read = p_reads[i],
                               write = p_writes[i], update_time = p_now
                WHERE collection = p_collections[i] AND user_id = p_user_ids[i] AND key = p_keys[i];
        ELSE
            -- No ON CONFLICT: a row inserted concurrently since the check must fail this
            -- statement (the writer then retries the request alone), never be overwritten.
            INSERT INTO storage (collection, user_id, key, value, version, read, write,
                                 create_time, update_time)
                VALUES (p_collections[i], p_user_ids[i], p_keys[i], p_values[i], p_versions[i],
                        p_reads[i], p_writes[i], p_now, p_now);
        END IF;
    END LOOP;
    RETURN QUERY SELECT 0::smallint, g - 1, createds[g] FROM generate_series(1, n) AS g;
END
$$;

-- A batch of storage-object deletes as ONE statement; same conventions as
-- metafi_write_objects. p_versions[i] NULL = delete whatever version. Returns one row.
CREATE FUNCTION metafi_delete_objects(
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
