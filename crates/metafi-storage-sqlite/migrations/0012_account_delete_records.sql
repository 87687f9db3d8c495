-- A deleted account's leaderboard records go with it, in the deletion's transaction, as
-- Nakama's DeleteAccount removes them (LeaderboardRecordsDeleteAll). Owners need not be users
-- (server code writes records for any id), so this is a trigger, not a foreign key.
CREATE TRIGGER users_delete_removes_leaderboard_records AFTER DELETE ON users
BEGIN
    DELETE FROM leaderboard_record WHERE owner_id = OLD.id;
END;
