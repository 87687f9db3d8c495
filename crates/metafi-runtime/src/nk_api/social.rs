//! Social sign-in for server code: `authenticate_*`, `link_*` and `unlink_*` for Apple,
//! Facebook, Facebook Instant Games, Game Center, Google and Steam, over the
//! `metafi_core::SocialSignIn` the REST routes use. Arguments, their order and their messages
//! are Nakama's (Lua `authenticate_facebook(token, import_friends?, username?, create?)`, …);
//! results as `authenticate_device`'s: Lua `user_id, username, created`, JavaScript
//! `{userId, username, created}`.
//!
//! `import_friends` (default true, as Nakama) imports the user's Facebook or Steam friends
//! after the sign-in or link; a failed import does not fail the call.

use metafi_core::friends::Actor;
use metafi_core::{Credential, GameCenterProof};
use metafi_storage::Provider;
use uuid::Uuid;

use super::authenticate::{create_arg, username_arg};
use super::links::user_id;
use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    row(
        "authenticate_apple",
        "authenticateApple",
        authenticate_apple,
    ),
    row(
        "authenticate_facebook",
        "authenticateFacebook",
        authenticate_facebook,
    ),
    row(
        "authenticate_facebook_instant_game",
        "authenticateFacebookInstantGame",
        authenticate_instant_game,
    ),
    row(
        "authenticate_game_center",
        "authenticateGameCenter",
        authenticate_game_center,
    ),
    row(
        "authenticate_google",
        "authenticateGoogle",
        authenticate_google,
    ),
    row(
        "authenticate_steam",
        "authenticateSteam",
        authenticate_steam,
    ),
    row("link_apple", "linkApple", link_apple),
    row("link_facebook", "linkFacebook", link_facebook),
    row(
        "link_facebook_instant_game",
        "linkFacebookInstantGame",
        link_instant_game,
    ),
    row("link_gamecenter", "linkGameCenter", link_game_center),
    row("link_google", "linkGoogle", link_google),
    row("link_steam", "linkSteam", link_steam),
    row("unlink_apple", "unlinkApple", unlink_apple),
    row("unlink_facebook", "unlinkFacebook", unlink_facebook),
    row(
        "unlink_facebook_instant_game",
        "unlinkFacebookInstantGame",
        unlink_instant_game,
    ),
    row("unlink_gamecenter", "unlinkGameCenter", unlink_game_center),
    row("unlink_google", "unlinkGoogle", unlink_google),
    row("unlink_steam", "unlinkSteam", unlink_steam),
];

const fn row(lua: &'static str, js: &'static str, call: fn(Nk, NkArgs) -> NkFuture) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Async(call),
    }
}

/// Signs in and answers as Nakama.
async fn sign_in(
    nk: &Nk,
    name: &str,
    js: bool,
    credential: Credential,
    username: Option<String>,
    create: bool,
    import_friends: bool,
) -> Result<NkValue, NkError> {
    let social = nk.social_services(name)?;
    let outcome = social
        .authenticate_and_sync(credential, username, create, None, import_friends)
        .await
        .map_err(|e| NkError::core("error authenticating", e))?;
    let user_id = NkValue::from(outcome.user_id.to_string());
    if js {
        return Ok(NkMap::new()
            .with("user_id", user_id)
            .with("username", outcome.username)
            .with("created", outcome.created)
            .into());
    }
    Ok(NkValue::Multi(vec![
        user_id,
        outcome.username.into(),
        outcome.created.into(),
    ]))
}

/// Apple and Steam raise before reading their arguments when they are not configured.
fn configured(nk: &Nk, name: &str, provider: Provider) -> Result<(), NkError> {
    let social = nk.social_services(name)?;
    if social.is_configured(provider) {
        return Ok(());
    }
    Err(NkError::failed(match provider {
        Provider::Apple => "Apple authentication is not configured",
        _ => "Steam authentication is not configured",
    }))
}

/// `(token, username?, create = true)`.
fn authenticate_apple(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        configured(&nk, "authenticate_apple", Provider::Apple)?;
        let token = args.at(1).non_empty("expects token string")?.to_owned();
        let username = username_arg(&args.at(2))?;
        let create = create_arg(&args.at(3))?;
        let js = args.is_js();
        let credential = Credential::Apple { token };
        sign_in(
            &nk,
            "authenticate_apple",
            js,
            credential,
            username,
            create,
            false,
        )
        .await
    })
}

/// `(token, import_friends = true, username?, create = true)`.
fn authenticate_facebook(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let message = if js {
            "expects token string"
        } else {
            "expects access token string"
        };
        let token = args.at(1).non_empty(message)?.to_owned();
        let import_friends = args
            .at(2)
            .opt_bool("expects import friends to be a boolean")?
            .unwrap_or(true);
        let username = username_arg(&args.at(3))?;
        let create = create_arg(&args.at(4))?;
        let credential = Credential::Facebook { token };
        sign_in(
            &nk,
            "authenticate_facebook",
            js,
            credential,
            username,
            create,
            import_friends,
        )
        .await
    })
}

/// `(signed_player_info, username?, create = true)`.
fn authenticate_instant_game(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let info = args
            .at(1)
            .non_empty("expects signed player info")?
            .to_owned();
        let username = username_arg(&args.at(2))?;
        let create = create_arg(&args.at(3))?;
        let credential = Credential::FacebookInstantGame {
            signed_player_info: info,
        };
        let js = args.is_js();
        let name = "authenticate_facebook_instant_game";
        sign_in(&nk, name, js, credential, username, create, false).await
    })
}

/// The six Game Center arguments from `first` on: player id, bundle id, timestamp, salt,
/// signature, public key URL. `required` reads them as authenticate and link do (each must be
/// given); otherwise (unlink) each may be nil.
fn game_center_args(
    args: &NkArgs,
    first: usize,
    required: bool,
) -> Result<GameCenterProof, NkError> {
    let text = |offset: usize, message: &'static str| -> Result<String, NkError> {
        let arg = args.at(first + offset);
        if required {
            Ok(arg.non_empty(message)?.to_owned())
        } else {
            Ok(arg.opt_string(message)?.unwrap_or("").to_owned())
        }
    };
    let player_id = text(0, "expects player ID string")?;
    let bundle_id = text(1, "expects bundle ID string")?;
    let timestamp_arg = args.at(first + 2);
    let timestamp_seconds = if required {
        let ts = timestamp_arg.integer("expects timestamp value")?;
        if ts == 0 {
            return Err(timestamp_arg.error("expects timestamp value"));
        }
        ts
    } else {
        timestamp_arg
            .opt_integer("expects timestamp value")?
            .unwrap_or(0)
    };
    Ok(GameCenterProof {
        player_id,
        bundle_id,
        timestamp_seconds,
        salt: text(3, "expects salt string")?,
        signature: text(4, "expects signature string")?,
        public_key_url: text(5, "expects public key URL string")?,
    })
}

/// `(player_id, bundle_id, timestamp, salt, signature, public_key_url, username?, create =
/// true)`.
fn authenticate_game_center(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let proof = game_center_args(&args, 1, true)?;
        let username = username_arg(&args.at(7))?;
        let create = create_arg(&args.at(8))?;
        let js = args.is_js();
        let credential = Credential::GameCenter(proof);
        sign_in(
            &nk,
            "authenticate_game_center",
            js,
            credential,
            username,
            create,
            false,
        )
        .await
    })
}

/// `(token, username?, create = true)`.
fn authenticate_google(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let token = args.at(1).non_empty("expects ID token string")?.to_owned();
        let username = username_arg(&args.at(2))?;
        let create = create_arg(&args.at(3))?;
        let js = args.is_js();
        let credential = Credential::Google { token };
        sign_in(
            &nk,
            "authenticate_google",
            js,
            credential,
            username,
            create,
            false,
        )
        .await
    })
}

/// `(token, import_friends = true, username?, create = true)`.
fn authenticate_steam(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        configured(&nk, "authenticate_steam", Provider::Steam)?;
        let js = args.is_js();
        let message = if js {
            "expects token string"
        } else {
            "expects access token string"
        };
        let token = args.at(1).non_empty(message)?.to_owned();
        let import_friends = args
            .at(2)
            .opt_bool("expects import friends to be a boolean")?
            .unwrap_or(true);
        let username = username_arg(&args.at(3))?;
        let create = create_arg(&args.at(4))?;
        let credential = Credential::Steam { token };
        sign_in(
            &nk,
            "authenticate_steam",
            js,
            credential,
            username,
            create,
            import_friends,
        )
        .await
    })
}

async fn link(nk: &Nk, name: &str, user: Uuid, credential: Credential) -> Result<NkValue, NkError> {
    nk.social_services(name)?
        .link(user, credential)
        .await
        .map_err(|e| NkError::core("error linking", e))?;
    Ok(NkValue::Nil)
}

/// A Facebook or Steam link that imports the provider's friends unless `import_friends` is
/// false.
async fn link_and_sync(
    nk: &Nk,
    name: &str,
    actor: &Actor,
    credential: Credential,
    import_friends: bool,
) -> Result<NkValue, NkError> {
    nk.social_services(name)?
        .link_and_sync(actor, credential, import_friends)
        .await
        .map_err(|e| NkError::core("error linking", e))?;
    Ok(NkValue::Nil)
}

async fn unlink(
    nk: &Nk,
    name: &str,
    user: Uuid,
    credential: Credential,
) -> Result<NkValue, NkError> {
    nk.social_services(name)?
        .unlink(user, credential)
        .await
        .map_err(|e| NkError::core("error unlinking", e))?;
    Ok(NkValue::Nil)
}

/// A required token at position 2.
fn token(args: &NkArgs, position: usize, message: &'static str) -> Result<String, NkError> {
    Ok(args.at(position).non_empty(message)?.to_owned())
}

/// An optional token (unlink): empty when nil.
fn optional(args: &NkArgs, position: usize) -> Result<String, NkError> {
    Ok(args
        .at(position)
        .opt_string("expects a string")?
        .unwrap_or("")
        .to_owned())
}

/// `(user_id, token)`: the link of a provider whose credential is one token (`message` when
/// it is missing).
fn link_token(
    nk: Nk,
    args: NkArgs,
    name: &'static str,
    message: &'static str,
    credential: fn(String) -> Credential,
) -> NkFuture {
    Box::pin(async move {
        let user = user_id(&args)?;
        let token = token(&args, 2, message)?;
        link(&nk, name, user, credential(token)).await
    })
}

/// `(user_id, token?)`: the unlink of a provider whose credential is one token.
fn unlink_token(
    nk: Nk,
    args: NkArgs,
    name: &'static str,
    credential: fn(String) -> Credential,
) -> NkFuture {
    Box::pin(async move {
        let user = user_id(&args)?;
        let token = optional(&args, 2)?;
        unlink(&nk, name, user, credential(token)).await
    })
}

fn link_apple(nk: Nk, args: NkArgs) -> NkFuture {
    let apple = |token| Credential::Apple { token };
    link_token(nk, args, "link_apple", "expects token string", apple)
}

/// `(user_id, username, token, import_friends = true)`.
fn link_facebook(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user = user_id(&args)?;
        let username = args.at(2).non_empty("expects username string")?.to_owned();
        let token = token(&args, 3, "expects token string")?;
        let import_friends = args
            .at(4)
            .opt_bool("expects import friends to be a boolean")?
            .unwrap_or(true);
        let actor = Actor { id: user, username };
        let credential = Credential::Facebook { token };
        link_and_sync(&nk, "link_facebook", &actor, credential, import_friends).await
    })
}

/// `(user_id, signed_player_info)`.
fn link_instant_game(nk: Nk, args: NkArgs) -> NkFuture {
    let message = "expects signed player info string";
    link_token(
        nk,
        args,
        "link_facebook_instant_game",
        message,
        instant_game,
    )
}

fn instant_game(signed_player_info: String) -> Credential {
    Credential::FacebookInstantGame { signed_player_info }
}

/// `(user_id, player_id, bundle_id, timestamp, salt, signature, public_key_url)`.
fn link_game_center(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user = user_id(&args)?;
        let proof = game_center_args(&args, 2, true)?;
        link(&nk, "link_gamecenter", user, Credential::GameCenter(proof)).await
    })
}

fn link_google(nk: Nk, args: NkArgs) -> NkFuture {
    let google = |token| Credential::Google { token };
    link_token(nk, args, "link_google", "expects token string", google)
}

/// `(user_id, username, token, import_friends = true)`.
fn link_steam(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user = user_id(&args)?;
        let username = args.at(2).non_empty("expects username string")?.to_owned();
        let token = token(&args, 3, "expects token string")?;
        let import_friends = args
            .at(4)
            .opt_bool("expects import friends to be a boolean")?
            .unwrap_or(true);
        let actor = Actor { id: user, username };
        let credential = Credential::Steam { token };
        link_and_sync(&nk, "link_steam", &actor, credential, import_friends).await
    })
}

fn unlink_apple(nk: Nk, args: NkArgs) -> NkFuture {
    unlink_token(nk, args, "unlink_apple", |token| Credential::Apple {
        token,
    })
}

fn unlink_facebook(nk: Nk, args: NkArgs) -> NkFuture {
    unlink_token(nk, args, "unlink_facebook", |token| Credential::Facebook {
        token,
    })
}

/// `(user_id, signed_player_info?)`.
fn unlink_instant_game(nk: Nk, args: NkArgs) -> NkFuture {
    unlink_token(nk, args, "unlink_facebook_instant_game", instant_game)
}

/// `(user_id, player_id?, bundle_id?, timestamp?, salt?, signature?, public_key_url?)`: the
/// proof is checked only when every part is given.
fn unlink_game_center(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user = user_id(&args)?;
        let proof = game_center_args(&args, 2, false)?;
        unlink(
            &nk,
            "unlink_gamecenter",
            user,
            Credential::GameCenter(proof),
        )
        .await
    })
}

fn unlink_google(nk: Nk, args: NkArgs) -> NkFuture {
    unlink_token(nk, args, "unlink_google", |token| Credential::Google {
        token,
    })
}

fn unlink_steam(nk: Nk, args: NkArgs) -> NkFuture {
    unlink_token(nk, args, "unlink_steam", |token| Credential::Steam {
        token,
    })
}
