-- Social sign-in identities (Nakama's users columns): each is set by an authenticate or link
-- call with a verified provider token and belongs to at most one user.
ALTER TABLE users ADD COLUMN apple_id text COLLATE "C";
ALTER TABLE users ADD COLUMN facebook_id text COLLATE "C";
ALTER TABLE users ADD COLUMN facebook_instant_game_id text COLLATE "C";
ALTER TABLE users ADD COLUMN gamecenter_id text COLLATE "C";
ALTER TABLE users ADD COLUMN google_id text COLLATE "C";
ALTER TABLE users ADD COLUMN steam_id text COLLATE "C";
-- Partial, as for email and custom_id: most users have none of them.
CREATE UNIQUE INDEX users_apple_id_key ON users (apple_id) WHERE apple_id IS NOT NULL;
CREATE UNIQUE INDEX users_facebook_id_key ON users (facebook_id) WHERE facebook_id IS NOT NULL;
CREATE UNIQUE INDEX users_facebook_instant_game_id_key ON users (facebook_instant_game_id)
    WHERE facebook_instant_game_id IS NOT NULL;
CREATE UNIQUE INDEX users_gamecenter_id_key ON users (gamecenter_id) WHERE gamecenter_id IS NOT NULL;
CREATE UNIQUE INDEX users_google_id_key ON users (google_id) WHERE google_id IS NOT NULL;
CREATE UNIQUE INDEX users_steam_id_key ON users (steam_id) WHERE steam_id IS NOT NULL;
