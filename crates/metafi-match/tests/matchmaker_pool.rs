//! The matchmaker forms groups of the right sizes: counts, multiples, queries, waiting for the
//! preferred size, tickets per session, removal.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_match::testing::presence;
use metafi_match::{
    MatchedEntry, Matchmaker, MatchmakerConfig, MatchmakerError, Presence, TicketRequest,
};

fn request(min: u32, max: u32) -> TicketRequest {
    TicketRequest {
        query: "*".into(),
        min_count: min,
        max_count: max,
        count_multiple: 1,
        string_properties: HashMap::new(),
        numeric_properties: HashMap::new(),
    }
}

fn with(
    mut r: TicketRequest,
    query: &str,
    strings: &[(&str, &str)],
    numbers: &[(&str, f64)],
) -> TicketRequest {
    r.query = query.into();
    r.string_properties = strings
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    r.numeric_properties = numbers.iter().map(|(k, v)| ((*k).into(), *v)).collect();
    r
}

fn pool() -> Matchmaker {
    Matchmaker::new(MatchmakerConfig::default())
}

fn add(mm: &mut Matchmaker, r: TicketRequest) -> Arc<Presence> {
    let p = presence("player");
    mm.add(p.clone(), r, 0).unwrap();
    p
}

fn sizes(groups: &[Vec<MatchedEntry>]) -> Vec<usize> {
    let mut sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    sizes.sort();
    sizes
}

#[test]
fn two_players_wanting_two_match_at_once() {
    let mut mm = pool();
    let a = add(&mut mm, request(2, 2));
    let b = add(&mut mm, request(2, 2));
    let groups = mm.process();
    assert_eq!(sizes(&groups), vec![2]);
    let mut sessions: Vec<_> = groups[0].iter().map(|e| e.presence.session_id).collect();
    sessions.sort();
    let mut expected = vec![a.session_id, b.session_id];
    expected.sort();
    assert_eq!(sessions, expected);
    assert!(mm.is_empty(), "matched tickets leave the pool");
}

#[test]
fn a_full_group_forms_at_once_and_a_partial_one_waits_for_the_last_interval() {
    let mut mm = pool();
    for _ in 0..4 {
        add(&mut mm, request(2, 4));
    }
    assert_eq!(
        sizes(&mm.process()),
        vec![4],
        "max_count reached: no waiting"
    );

    for _ in 0..3 {
        add(&mut mm, request(2, 4));
    }
    assert!(
        mm.process().is_empty(),
        "3 of a preferred 4: wait (max_intervals = 2)"
    );
    assert_eq!(sizes(&mm.process()), vec![3], "last interval: settle for 3");
}

#[test]
fn count_multiple_trims_the_newest() {
    let mut mm = pool();
    let mut r = request(2, 6);
    r.count_multiple = 2;
    let players: Vec<_> = (0..5).map(|_| add(&mut mm, r.clone())).collect();
    mm.process();
    let groups = mm.process();
    assert_eq!(sizes(&groups), vec![4]);
    let left_out = players
        .iter()
        .find(|p| {
            !groups[0]
                .iter()
                .any(|e| e.presence.session_id == p.session_id)
        })
        .unwrap();
    assert_eq!(
        left_out.session_id, players[4].session_id,
        "the newest ticket waits"
    );
    assert_eq!(mm.len(), 1);
}

#[test]
fn queries_keep_regions_apart_and_compare_numbers() {
    let mut mm = pool();
    let eu = |mm: &mut Matchmaker| {
        add(
            mm,
            with(
                request(2, 2),
                "+properties.region:eu",
                &[("region", "eu")],
                &[("skill", 10.0)],
            ),
        )
    };
    let us = |mm: &mut Matchmaker| {
        add(
            mm,
            with(
                request(2, 2),
                "+properties.region:us",
                &[("region", "us")],
                &[("skill", 10.0)],
            ),
        )
    };
    let (e1, e2, u1) = (eu(&mut mm), eu(&mut mm), us(&mut mm));
    let groups = mm.process();
    assert_eq!(sizes(&groups), vec![2]);
    assert!(
        groups[0]
            .iter()
            .all(|e| e.presence.session_id != u1.session_id)
    );
    assert!(
        groups[0]
            .iter()
            .any(|e| e.presence.session_id == e1.session_id)
    );
    assert!(
        groups[0]
            .iter()
            .any(|e| e.presence.session_id == e2.session_id)
    );
    assert_eq!(
        groups[0][0]
            .string_properties
            .get("region")
            .map(String::as_str),
        Some("eu")
    );
    assert_eq!(mm.len(), 1);

    // Nakama's default: a ticket whose query accepts another matches it, even if the other's
    // query would not accept it back.
    let mut mm = pool();
    add(
        &mut mm,
        with(
            request(2, 2),
            "+properties.skill:>=50",
            &[],
            &[("skill", 60.0)],
        ),
    );
    add(
        &mut mm,
        with(
            request(2, 2),
            "+properties.skill:>=50",
            &[],
            &[("skill", 10.0)],
        ),
    );
    assert_eq!(sizes(&mm.process()), vec![2]);

    // With rev_precision both queries must accept each other.
    let mut mm = Matchmaker::new(MatchmakerConfig {
        rev_precision: true,
        ..MatchmakerConfig::default()
    });
    add(
        &mut mm,
        with(
            request(2, 2),
            "+properties.skill:>=50",
            &[],
            &[("skill", 60.0)],
        ),
    );
    add(
        &mut mm,
        with(
            request(2, 2),
            "+properties.skill:>=50",
            &[],
            &[("skill", 10.0)],
        ),
    );
    assert!(
        mm.process().is_empty(),
        "skill 10 is below the first ticket's range"
    );
    add(&mut mm, with(request(2, 2), "*", &[], &[("skill", 55.0)]));
    assert_eq!(sizes(&mm.process()), vec![2]);
    assert_eq!(mm.len(), 1);
}

#[test]
fn incompatible_count_ranges_do_not_mix() {
    let mut mm = pool();
    add(&mut mm, request(2, 2));
    add(&mut mm, request(6, 8));
    mm.process();
    assert!(mm.process().is_empty());
    assert_eq!(mm.len(), 2);
}

#[test]
fn a_session_never_matches_itself() {
    let mut mm = pool();
    let p = presence("twice");
    mm.add(p.clone(), request(2, 2), 0).unwrap();
    mm.add(p.clone(), request(2, 2), 0).unwrap();
    assert!(mm.process().is_empty());
}

#[test]
fn tickets_per_session_are_limited_and_die_with_the_session() {
    let mut mm = pool();
    let p = presence("busy");
    let mut tickets = Vec::new();
    for _ in 0..3 {
        tickets.push(mm.add(p.clone(), request(2, 2), 0).unwrap());
    }
    assert_eq!(
        mm.add(p.clone(), request(2, 2), 0),
        Err(MatchmakerError::TooManyTickets { limit: 3 })
    );
    let other = presence("other");
    assert_eq!(
        mm.remove(other.session_id, &tickets[0]),
        Err(MatchmakerError::TicketNotFound)
    );
    assert_eq!(mm.remove(p.session_id, &tickets[0]), Ok(()));
    assert_eq!(
        mm.remove(p.session_id, &tickets[0]),
        Err(MatchmakerError::TicketNotFound)
    );
    assert_eq!(mm.len(), 2);
    assert_eq!(mm.remove_session(p.session_id), 2);
    assert!(mm.is_empty());
}

#[test]
fn requests_are_validated_like_nakama() {
    let mut mm = pool();
    let p = presence("p");
    let cases = [
        (request(1, 2), "Invalid minimum count, must be >= 2"),
        (
            request(3, 2),
            "Invalid maximum count, must be >= minimum count",
        ),
        (
            {
                let mut r = request(2, 4);
                r.count_multiple = 0;
                r
            },
            "Invalid count multiple, must be >= 1",
        ),
        (
            {
                let mut r = request(3, 6);
                r.count_multiple = 2;
                r
            },
            "Invalid count multiple for minimum count, must divide",
        ),
        (
            {
                let mut r = request(2, 5);
                r.count_multiple = 2;
                r
            },
            "Invalid count multiple for maximum count, must divide",
        ),
        (
            with(request(2, 2), "+properties.x:/re/", &[], &[]),
            "regular expressions",
        ),
    ];
    for (r, message) in cases {
        let e = mm.add(p.clone(), r, 0).unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
    }
}

#[test]
fn many_players_form_full_groups() {
    let mut mm = pool();
    for _ in 0..100 {
        add(&mut mm, request(4, 10));
    }
    let groups = mm.process();
    assert_eq!(sizes(&groups), vec![10; 10]);
}

#[test]
fn a_party_of_two_matches_as_one_unit_with_another_party() {
    let mut mm = pool();
    let (a1, a2) = (presence("a1"), presence("a2"));
    let (b1, b2) = (presence("b1"), presence("b2"));
    let ta = mm
        .add_party("A.n", vec![a1.clone(), a2.clone()], request(4, 4), 0)
        .unwrap();
    // A party never matches with itself, even with a second ticket that would fill the count.
    mm.add_party("A.n", vec![a1.clone(), a2.clone()], request(4, 4), 0)
        .unwrap();
    assert!(mm.process().is_empty());
    mm.remove_party("A.n", &ta).unwrap();
    mm.add_party("B.n", vec![b1.clone(), b2.clone()], request(4, 4), 5)
        .unwrap();
    let groups = mm.process();
    assert_eq!(sizes(&groups), vec![4]);
    let mut parties: Vec<&str> = groups[0].iter().map(|e| e.party_id.as_str()).collect();
    parties.sort();
    assert_eq!(parties, ["A.n", "A.n", "B.n", "B.n"]);
    assert!(groups[0].iter().any(|e| e.created_ms == 5));
    assert!(mm.is_empty());
}

#[test]
fn a_party_of_two_does_not_fit_a_group_with_one_place_left() {
    let mut mm = pool();
    add(&mut mm, request(2, 2));
    mm.add_party(
        "P.n",
        vec![presence("p1"), presence("p2")],
        request(2, 2),
        0,
    )
    .unwrap();
    // 1 + 2 > 2: the party and the single never form a group of 2.
    assert!(mm.process().is_empty());
    assert_eq!(mm.len(), 2);
}

#[test]
fn party_tickets_belong_to_the_party_and_are_bounded() {
    let mut mm = pool();
    let (p1, p2) = (presence("p1"), presence("p2"));
    let ticket = mm
        .add_party("P.n", vec![p1.clone(), p2.clone()], request(2, 4), 0)
        .unwrap();
    // A member cannot remove the party's ticket as its own, nor another party.
    assert_eq!(
        mm.remove(p1.session_id, &ticket),
        Err(MatchmakerError::TicketNotFound)
    );
    assert_eq!(
        mm.remove_party("Q.n", &ticket),
        Err(MatchmakerError::TicketNotFound)
    );
    for _ in 0..2 {
        mm.add_party("P.n", vec![p1.clone(), p2.clone()], request(2, 4), 0)
            .unwrap();
    }
    assert_eq!(
        mm.add_party("P.n", vec![p1.clone(), p2.clone()], request(2, 4), 0),
        Err(MatchmakerError::TooManyPartyTickets)
    );
    // A member holding the limit through its party cannot add its own.
    assert_eq!(
        mm.add(p1.clone(), request(2, 2), 0),
        Err(MatchmakerError::TooManyTickets { limit: 3 })
    );
    assert_eq!(
        mm.add_party("R.n", vec![p1.clone(), p1.clone()], request(2, 4), 0),
        Err(MatchmakerError::DuplicateSession)
    );
    assert_eq!(mm.remove_party_all("P.n"), 3);
    assert!(mm.is_empty());
    assert_eq!(mm.stats().tickets, 0);
}

#[test]
fn stats_count_the_pool_and_its_oldest_ticket() {
    let mut mm = pool();
    assert_eq!(mm.stats().oldest_created_ms, None);
    mm.add(presence("a"), request(2, 8), 200).unwrap();
    mm.add(presence("b"), request(2, 8), 100).unwrap();
    let stats = mm.stats();
    assert_eq!((stats.tickets, stats.oldest_created_ms), (2, Some(100)));
}
