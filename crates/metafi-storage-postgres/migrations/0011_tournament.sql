-- Tournaments: how many owners entered the current period of a tournament with a max size
-- (Nakama's `leaderboard.size`); reset to 0 when a period ends.
ALTER TABLE leaderboard ADD COLUMN size integer NOT NULL DEFAULT 0;
