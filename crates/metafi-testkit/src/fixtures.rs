//! Fixture users: a fresh account signed in with a device, as tests need it.

/// A signed-in test user.
pub struct User {
    pub token: String,
    pub id: String,
    pub username: String,
}

/// Creates an account with a fresh device id and reads its id and username.
pub async fn user(http: &crate::Http) -> User {
    let (token, _) = http.new_session().await;
    let account = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    assert_eq!(account.status, 200, "{:?}", account.body);
    User {
        token,
        id: account.body["user"]["id"].as_str().expect("id").to_owned(),
        username: account.body["user"]["username"]
            .as_str()
            .expect("username")
            .to_owned(),
    }
}
