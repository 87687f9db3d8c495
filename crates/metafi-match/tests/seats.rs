//! Seats (`docs/MATCHES.md`, "Seats"): finders that reserve a seat ahead of the join
//! (`Matches::find_seat`, `Matches::reserve_seat`), listings that count reserved seats, and the
//! join path that uses a reservation up. Driven with a fake clock: no timing assertions.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::collections::HashMap;
use std::time::Duration;

use metafi_match::testing::{SeedMatch, join_request, presence};
use metafi_match::{JoinOutcome, ListQuery, MatchConfig, MatchError, MatchId};
use support::{Engine, spec};

const SEATS: u32 = 10;

fn seed() -> metafi_match::MatchSpec {
    spec(
        "seed",
        SeedMatch {
            tick_rate: 10,
            max_players: SEATS as usize,
        },
    )
}

fn open() -> ListQuery {
    ListQuery {
        limit: 10,
        authoritative: Some(true),
        max_size: Some(SEATS as i32 - 1),
        ..ListQuery::default()
    }
}

fn size(engine: &Engine, id: &MatchId) -> i32 {
    engine.matches.get(&id.to_string()).unwrap().unwrap().size
}

/// The seed's rush: every player finds a match (or creates one) and joins it, all at once —
/// every finder runs before any join reaches its match, the widest window there is. Every
/// player is seated, no match holds more than 10, and the matches are full (20 for 200).
#[test]
fn every_player_of_a_rush_is_seated_and_no_match_overfills() {
    let mut engine = Engine::single();
    let players: Vec<_> = (0..200).map(|i| presence(&format!("p{i}"))).collect();
    let matches = engine.matches.clone();
    let finders = players
        .iter()
        .map(|p| {
            let matches = matches.clone();
            let p = p.clone();
            async move {
                let id = matches.find_seat(&open(), p.user_id, SEATS, seed()).await?;
                let outcome = matches.join(&id, join_request(&p)).await?;
                Ok::<_, MatchError>((id, outcome))
            }
        })
        .collect();
    let results = engine.drive_all(finders);
    let mut per_match: HashMap<String, usize> = HashMap::new();
    for ((id, outcome), p) in results.into_iter().map(Result::unwrap).zip(&players) {
        assert!(
            matches!(outcome, JoinOutcome::Accepted { is_new: true, .. }),
            "{} was not seated: {outcome:?}",
            p.username
        );
        engine.matches.complete_join(&id, p.session_id);
        *per_match.entry(id.to_string()).or_default() += 1;
    }
    engine.step();
    assert_eq!(per_match.len(), 20, "{per_match:?}");
    for (id, seated) in &per_match {
        assert_eq!(*seated, 10, "match {id}");
    }
    for s in engine.matches.stats() {
        assert_eq!((s.presences, s.pending_joins), (10, 0), "{}", s.match_id);
    }
    // Every seat is taken: the next finder gets a new match.
    let late = presence("late");
    let id = engine
        .drive(matches.find_seat(&open(), late.user_id, SEATS, seed()))
        .unwrap();
    assert!(!per_match.contains_key(&id.to_string()));
}

/// The same rush where players arrive between other players' joins (finders and joins
/// interleaved), with leaves freeing seats that later finders take.
#[test]
fn seats_freed_by_leaves_are_found_again() {
    let mut engine = Engine::single();
    let matches = engine.matches.clone();
    let mut seated = Vec::new();
    for i in 0..25 {
        let p = presence(&format!("p{i}"));
        let id = engine
            .drive(matches.find_seat(&open(), p.user_id, SEATS, seed()))
            .unwrap();
        engine.join_as(&id, &p);
        seated.push((id, p));
    }
    let distinct: std::collections::HashSet<_> = seated.iter().map(|(id, _)| id).collect();
    assert_eq!(distinct.len(), 3, "10 + 10 + 5");
    // A player of the first match leaves: the next finder takes a free seat in the first or
    // the third match (listings show the newest first), never a new match.
    let (first, leaver) = seated[0].clone();
    matches.leave(&first, leaver.session_id);
    engine.step();
    assert_eq!(size(&engine, &first), 9);
    let p = presence("again");
    let id = engine
        .drive(matches.find_seat(
            &ListQuery {
                query: Some("*".into()),
                ..open()
            },
            p.user_id,
            SEATS,
            seed(),
        ))
        .unwrap();
    assert!(distinct.contains(&id));
    assert_eq!(size(&engine, &id), if id == first { 10 } else { 6 });
}

/// A reserved seat counts in listings (size and the max_size filter) and in the handler's
/// pending joins; a stranger cannot take it; its player can.
#[test]
fn a_reserved_seat_is_listed_and_kept_for_its_player() {
    let mut engine = Engine::single();
    let id = engine.create(
        "seed",
        SeedMatch {
            tick_rate: 10,
            max_players: 2,
        },
    );
    let matches = engine.matches.clone();
    let (a, b) = (presence("a"), presence("b"));
    assert!(matches.reserve_seat(&id.to_string(), a.user_id, 2).unwrap());
    assert!(matches.reserve_seat(&id.to_string(), b.user_id, 2).unwrap());
    // Renewing one's own seat is not a second seat; a third user finds no room.
    assert!(matches.reserve_seat(&id.to_string(), a.user_id, 2).unwrap());
    assert!(
        !matches
            .reserve_seat(&id.to_string(), presence("c").user_id, 2)
            .unwrap()
    );
    assert_eq!(size(&engine, &id), 2);
    let with_room = ListQuery {
        max_size: Some(1),
        ..open()
    };
    assert!(matches.list(&with_room).unwrap().is_empty());

    // The handler admits while presences + pending < 2: reserved seats are pending joins.
    let stranger = presence("stranger");
    let outcome = engine
        .drive(matches.join(&id, join_request(&stranger)))
        .unwrap();
    assert!(
        matches!(&outcome, JoinOutcome::Rejected { reason } if reason == "match full"),
        "{outcome:?}"
    );
    for p in [&a, &b] {
        let outcome = engine.drive(matches.join(&id, join_request(p))).unwrap();
        assert!(
            matches!(outcome, JoinOutcome::Accepted { is_new: true, .. }),
            "{outcome:?}"
        );
    }
    // The reservations became pending joins: still 2, not 4.
    assert_eq!(size(&engine, &id), 2);
    let s = engine.matches.stats().pop().unwrap();
    assert_eq!(s.pending_joins, 2);
}

/// A refused join frees the seat its player held; so does a join that never comes
/// (`match.seat_reservation_ms`), and a leave.
#[test]
fn refused_lapsed_and_left_seats_are_freed() {
    let mut engine = Engine::new(MatchConfig {
        executor_threads: 1,
        seat_reservation: Duration::from_secs(5),
        ..MatchConfig::default()
    });
    let id = engine.create(
        "seed",
        SeedMatch {
            tick_rate: 10,
            max_players: 1,
        },
    );
    let matches = engine.matches.clone();
    let text = id.to_string();

    // Refused: the match is full of a player, and b's reservation (made for 2 seats) is
    // refused by the handler, which allows 1.
    let a = presence("a");
    let outcome = engine.drive(matches.join(&id, join_request(&a))).unwrap();
    assert!(matches!(outcome, JoinOutcome::Accepted { .. }));
    matches.complete_join(&id, a.session_id);
    engine.step();
    let b = presence("b");
    assert!(matches.reserve_seat(&text, b.user_id, 2).unwrap());
    assert_eq!(size(&engine, &id), 2);
    let outcome = engine.drive(matches.join(&id, join_request(&b))).unwrap();
    assert!(matches!(outcome, JoinOutcome::Rejected { .. }));
    assert_eq!(size(&engine, &id), 1, "the refused join's seat is free");

    // Left: a leaves, its seat is free.
    matches.leave(&id, a.session_id);
    engine.step();
    assert_eq!(size(&engine, &id), 0);

    // Lapsed: c reserves and never comes.
    let c = presence("c");
    assert!(matches.reserve_seat(&text, c.user_id, 1).unwrap());
    assert!(
        !matches
            .reserve_seat(&text, presence("d").user_id, 1)
            .unwrap()
    );
    engine.run_for(Duration::from_millis(4_900));
    assert_eq!(
        size(&engine, &id),
        1,
        "still held before match.seat_reservation_ms"
    );
    engine.run_for(Duration::from_millis(200));
    assert_eq!(size(&engine, &id), 0, "lapsed");
    assert!(
        matches
            .reserve_seat(&text, presence("d").user_id, 1)
            .unwrap()
    );
}

/// Bad arguments and matches that cannot be reserved in.
#[test]
fn reservations_need_a_local_match_and_a_size() {
    let mut engine = Engine::single();
    let matches = engine.matches.clone();
    let user = presence("u").user_id;
    assert!(matches!(
        matches.reserve_seat("nope", user, 1),
        Err(MatchError::InvalidId)
    ));
    let elsewhere = format!("{}.node2", uuid::Uuid::new_v4());
    assert!(!matches.reserve_seat(&elsewhere, user, 1).unwrap());
    assert!(matches!(
        engine.drive(matches.find_seat(&open(), user, 0, seed())),
        Err(MatchError::InvalidArgument { .. })
    ));
}
