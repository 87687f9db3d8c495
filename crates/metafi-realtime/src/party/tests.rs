use uuid::Uuid;

use super::*;

fn member(name: &str) -> Member {
    Member {
        session_id: Uuid::new_v4(),
        user_id: Uuid::new_v4(),
        username: name.into(),
    }
}

fn parties(max_parties: usize) -> Parties {
    Parties::new(
        "node1",
        PartyConfig {
            max_parties,
            max_size: 8,
        },
    )
}

fn uuid_of(id: &str) -> Uuid {
    parse_party_id(id).unwrap().0
}

#[test]
fn party_ids_are_uuid_dot_node_and_other_nodes_are_not_found() {
    let registry = parties(10);
    let a = member("a");
    let party = registry.create(true, false, 4, "", a.clone()).unwrap();
    assert!(party.party_id.ends_with(".node1"));
    assert_eq!(party.label, "{}");
    assert_eq!(party.presences, vec![a.wire()]);
    assert_eq!(party.leader, Some(a.wire()));
    let id = uuid_of(&party.party_id);
    assert_eq!(
        registry.read(id, "node2", |_| Ok(())).unwrap_err(),
        PartyError::NotFound
    );
    assert_eq!(
        registry
            .read(Uuid::new_v4(), "node1", |_| Ok(()))
            .unwrap_err(),
        PartyError::NotFound
    );
    assert!(parse_party_id("not-a-uuid.node1").is_none());
    assert!(parse_party_id(&Uuid::new_v4().to_string()).is_none());
}

#[test]
fn the_registry_is_bounded_and_a_closed_party_frees_its_place() {
    let registry = parties(2);
    let a = member("a");
    let first = registry.create(true, false, 4, "", a.clone()).unwrap();
    registry.create(true, false, 4, "", member("b")).unwrap();
    assert_eq!(
        registry
            .create(true, false, 4, "", member("c"))
            .unwrap_err(),
        PartyError::TooManyParties { limit: 2 }
    );
    let id = uuid_of(&first.party_id);
    let (_, effects) = registry
        .with(id, "node1", &[a.session_id], |p| {
            Ok(((), p.close(a.session_id)?))
        })
        .unwrap();
    assert!(effects.closed);
    assert_eq!(registry.len(), 1);
    assert_eq!(registry.parties_of(a.session_id), 0);
    registry.create(true, false, 4, "", member("c")).unwrap();
}

#[test]
fn an_ended_session_leaves_its_parties_and_drops_its_requests() {
    let registry = parties(10);
    let a = member("a");
    let b = member("b");
    let open = registry.create(true, false, 4, "", a.clone()).unwrap();
    let closed = registry.create(false, false, 4, "", member("c")).unwrap();
    let open_id = uuid_of(&open.party_id);
    let closed_id = uuid_of(&closed.party_id);
    registry
        .with(open_id, "node1", &[b.session_id], |p| p.join(b.clone()))
        .unwrap();
    registry
        .with(closed_id, "node1", &[b.session_id], |p| p.join(b.clone()))
        .unwrap();
    assert_eq!(registry.parties_of(b.session_id), 2);

    // The leader's socket ends: b leads the open party.
    let ended = registry.session_ended(a.session_id);
    assert_eq!(ended.len(), 1);
    let leader = registry
        .read(open_id, "node1", |p| Ok(p.leader().clone()))
        .unwrap();
    assert_eq!(leader, b);

    let ended = registry.session_ended(b.session_id);
    assert_eq!(ended.len(), 2);
    assert!(
        ended.iter().any(|(_, e)| e.closed),
        "the open party emptied"
    );
    assert_eq!(registry.len(), 1);
    let requests = registry
        .read(closed_id, "node1", |p| {
            Ok(p.join_requests(p.leader().session_id).unwrap())
        })
        .unwrap();
    assert!(requests.is_empty(), "the ended session's request is gone");
    assert_eq!(registry.parties_of(b.session_id), 0);
}

fn listing(
    limit: usize,
    open: Option<bool>,
    query: &str,
    cursor: &str,
) -> metafi_core::ListParties {
    metafi_core::ListParties {
        limit,
        open,
        show_hidden: false,
        query: query.into(),
        cursor: cursor.into(),
    }
}

#[test]
fn listing_skips_hidden_filters_open_queries_labels_and_pages() {
    let registry = parties(100);
    registry
        .create(true, false, 4, r#"{"mode":"ranked"}"#, member("a"))
        .unwrap();
    registry
        .create(false, false, 4, r#"{"mode":"casual"}"#, member("b"))
        .unwrap();
    registry
        .create(true, true, 4, "", member("hidden"))
        .unwrap();
    for i in 0..3 {
        registry
            .create(
                true,
                false,
                4,
                &format!(r#"{{"mode":"ranked","n":{i}}}"#),
                member("x"),
            )
            .unwrap();
    }
    let all = registry.list(&listing(100, None, "", "")).unwrap();
    assert_eq!(all.parties.len(), 5, "hidden parties are not listed");
    let with_hidden = registry
        .list(&metafi_core::ListParties {
            show_hidden: true,
            ..listing(100, None, "", "")
        })
        .unwrap();
    assert_eq!(
        with_hidden.parties.len(),
        6,
        "server code may see hidden parties"
    );
    assert!(all.cursor.is_empty());
    let closed = registry.list(&listing(100, Some(false), "", "")).unwrap();
    assert_eq!(closed.parties.len(), 1);
    assert_eq!(closed.parties[0].label, r#"{"mode":"casual"}"#);
    let ranked = registry
        .list(&listing(100, None, "+label.mode:ranked", ""))
        .unwrap();
    assert_eq!(ranked.parties.len(), 4);

    // Pages of 2 through the cursor, bound to its parameters.
    let first = registry.list(&listing(2, None, "", "")).unwrap();
    assert_eq!(first.parties.len(), 2);
    assert!(!first.cursor.is_empty());
    let second = registry.list(&listing(2, None, "", &first.cursor)).unwrap();
    let third = registry
        .list(&listing(2, None, "", &second.cursor))
        .unwrap();
    assert_eq!(third.parties.len(), 1);
    assert!(third.cursor.is_empty());
    let mut seen: Vec<String> = first
        .parties
        .iter()
        .chain(&second.parties)
        .chain(&third.parties)
        .map(|p| p.party_id.clone())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5, "pages neither repeat nor skip");
    assert_eq!(
        registry
            .list(&listing(3, None, "", &first.cursor))
            .unwrap_err(),
        ListError::CursorMismatch("limit")
    );
    assert_eq!(
        registry
            .list(&listing(2, Some(true), "", &first.cursor))
            .unwrap_err(),
        ListError::CursorMismatch("open")
    );
    assert_eq!(
        registry
            .list(&listing(2, None, "", "garbage!"))
            .unwrap_err(),
        ListError::Cursor
    );
}

fn listed(id: &str, open: bool, hidden: bool, label: &str, seq: u64) -> ListedParty {
    ListedParty {
        party_id: id.into(),
        open,
        hidden,
        max_size: 4,
        label: label.into(),
        seq,
    }
}

#[test]
fn other_nodes_listings_are_searched_with_this_nodes_parties() {
    let registry = parties(100);
    let (v0, none) = registry.listed();
    assert!(none.is_empty());
    let own = registry
        .create(true, false, 4, r#"{"mode":"ranked"}"#, member("a"))
        .unwrap();
    let (v1, mine) = registry.listed();
    assert!(v1 > v0, "a new party changes the listing");
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].party_id, own.party_id);
    assert_eq!(mine[0].label, r#"{"mode":"ranked"}"#);
    assert_eq!(registry.listing_version(), v1);

    registry.set_remote_listing(
        "node3",
        vec![
            listed("c2.node3", true, false, r#"{"mode":"ranked"}"#, 2),
            listed("c1.node3", true, false, r#"{"mode":"ranked"}"#, 1),
        ],
    );
    registry.set_remote_listing(
        "node2",
        vec![
            listed("b1.node2", false, false, r#"{"mode":"casual"}"#, 1),
            listed("b2.node2", true, true, "{}", 2),
            listed("bad.node2", true, false, "not json", 3),
        ],
    );
    // This node's name is never taken as another's.
    registry.set_remote_listing("node1", vec![listed("x.node1", true, false, "{}", 1)]);
    assert_eq!(registry.remote_len(), 4, "a garbled label is skipped");
    assert_eq!(registry.remote_nodes(), ["node2", "node3"]);

    let ids = |list: metafi_proto::api::PartyList| -> Vec<String> {
        list.parties.into_iter().map(|p| p.party_id).collect()
    };
    // This node's first, then the others by node name, each in creation order; hidden ones
    // only for server code.
    assert_eq!(
        ids(registry.list(&listing(100, None, "", "")).unwrap()),
        [own.party_id.as_str(), "b1.node2", "c1.node3", "c2.node3"]
    );
    assert_eq!(
        ids(registry
            .list(&metafi_core::ListParties {
                show_hidden: true,
                ..listing(100, None, "", "")
            })
            .unwrap()),
        [
            own.party_id.as_str(),
            "b1.node2",
            "b2.node2",
            "c1.node3",
            "c2.node3"
        ]
    );
    assert_eq!(
        ids(registry.list(&listing(100, Some(false), "", "")).unwrap()),
        ["b1.node2"]
    );
    assert_eq!(
        ids(registry
            .list(&listing(100, None, "+label.mode:ranked", ""))
            .unwrap()),
        [own.party_id.as_str(), "c1.node3", "c2.node3"]
    );
    // Pages run across the nodes.
    let first = registry.list(&listing(2, None, "", "")).unwrap();
    assert_eq!(ids(first.clone()), [own.party_id.as_str(), "b1.node2"]);
    let second = registry.list(&listing(2, None, "", &first.cursor)).unwrap();
    assert_eq!(ids(second.clone()), ["c1.node3", "c2.node3"]);
    assert!(second.cursor.is_empty());

    // A newer listing replaces the node's parties; a gone node's leave.
    registry.set_remote_listing("node3", vec![]);
    registry.drop_remote_listing("node2");
    assert_eq!(registry.remote_len(), 0);
    assert_eq!(
        ids(registry.list(&listing(100, None, "", "")).unwrap()),
        [own.party_id.as_str()]
    );

    // Closing a party changes the listing's version; an operation that leaves the listing
    // alone (a join) does not.
    let b = member("b");
    registry
        .with(uuid_of(&own.party_id), "node1", &[b.session_id], |p| {
            p.join(b.clone())
        })
        .unwrap();
    assert_eq!(registry.listing_version(), v1);
    let a_session = own.presences[0].session_id.parse::<Uuid>().unwrap();
    registry
        .with(uuid_of(&own.party_id), "node1", &[a_session], |p| {
            Ok(((), p.close(a_session)?))
        })
        .unwrap();
    assert!(registry.listing_version() > v1);
    assert!(registry.listed().1.is_empty());
}
