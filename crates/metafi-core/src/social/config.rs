//! Settings of social sign-in (`[social]` in the server configuration): the app ids and
//! secrets Nakama reads, and the provider endpoints (the providers' real URLs by default;
//! tests point them at fakes on 127.0.0.1).

use std::time::Duration;

/// Apple's JSON Web Key Set for Sign in with Apple.
pub const APPLE_KEYS_URL: &str = "https://appleid.apple.com/auth/keys";
/// Google's JSON Web Key Set for id tokens (the keys of `oauth2/v1/certs`, as JWKs).
pub const GOOGLE_KEYS_URL: &str = "https://www.googleapis.com/oauth2/v3/certs";
/// Facebook's Graph API `me` endpoint (Nakama's version).
pub const FACEBOOK_GRAPH_URL: &str = "https://graph.facebook.com/v22.0/me";
/// Facebook's Graph API friends list of the token's user (Nakama's version).
pub const FACEBOOK_FRIENDS_URL: &str = "https://graph.facebook.com/v22.0/me/friends";
/// Steam's Web API friend list.
pub const STEAM_FRIENDS_URL: &str = "https://partner.steam-api.com/ISteamUser/GetFriendList/v0001/";
/// Facebook Limited Login's JSON Web Key Set.
pub const FACEBOOK_LIMITED_KEYS_URL: &str =
    "https://limited.facebook.com/.well-known/oauth/openid/jwks/";
/// Steam's Web API ticket check.
pub const STEAM_AUTH_URL: &str =
    "https://partner.steam-api.com/ISteamUserAuth/AuthenticateUserTicket/v1/";

/// Everything social sign-in needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocialConfig {
    /// Sign in with Apple: the app's bundle id (Nakama's `social.apple.bundle_id`); empty
    /// means Apple sign-in is not configured. Tokens must be issued for it (their `aud`).
    pub apple_bundle_id: String,
    pub apple_keys_url: String,
    /// Google: the OAuth client ids an id token may be issued to (`aud`); empty accepts any,
    /// as Nakama (which does not check the audience).
    pub google_client_ids: Vec<String>,
    pub google_keys_url: String,
    /// Facebook Limited Login's app id (Nakama's `social.facebook_limited_login.app_id`);
    /// when set, a Limited Login token must be issued for it.
    pub facebook_limited_login_app_id: String,
    pub facebook_limited_keys_url: String,
    pub facebook_graph_url: String,
    /// The Graph API's friends list (friend import).
    pub facebook_friends_url: String,
    /// Facebook Instant Games: the app secret signed player info is checked with
    /// (`social.facebook_instant_game.app_secret`); empty means every signature fails.
    pub facebook_instant_game_app_secret: String,
    /// Steam: the publisher Web API key and app id (`social.steam.publisher_key`,
    /// `social.steam.app_id`); Steam sign-in is not configured unless both are set.
    pub steam_publisher_key: String,
    pub steam_app_id: u32,
    pub steam_auth_url: String,
    /// Steam's friend list (friend import).
    pub steam_friends_url: String,
    /// Game Center public key URLs that are accepted besides Apple's `https://*.apple.com/…`
    /// (exact prefixes; for tests and private mirrors). Empty in production.
    pub game_center_extra_key_url_prefixes: Vec<String>,
    /// Timeout of every call to a provider.
    pub timeout: Duration,
    /// Largest provider response read, in bytes.
    pub max_response_bytes: usize,
    /// How long fetched key sets are kept before they are fetched again.
    pub keys_refresh: Duration,
}

impl Default for SocialConfig {
    fn default() -> Self {
        SocialConfig {
            apple_bundle_id: String::new(),
            apple_keys_url: APPLE_KEYS_URL.to_owned(),
            google_client_ids: Vec::new(),
            google_keys_url: GOOGLE_KEYS_URL.to_owned(),
            facebook_limited_login_app_id: String::new(),
            facebook_limited_keys_url: FACEBOOK_LIMITED_KEYS_URL.to_owned(),
            facebook_graph_url: FACEBOOK_GRAPH_URL.to_owned(),
            facebook_friends_url: FACEBOOK_FRIENDS_URL.to_owned(),
            facebook_instant_game_app_secret: String::new(),
            steam_publisher_key: String::new(),
            steam_app_id: 0,
            steam_auth_url: STEAM_AUTH_URL.to_owned(),
            steam_friends_url: STEAM_FRIENDS_URL.to_owned(),
            game_center_extra_key_url_prefixes: Vec::new(),
            timeout: Duration::from_secs(5),
            max_response_bytes: 1 << 20,
            keys_refresh: Duration::from_secs(3600),
        }
    }
}
