use metafi_proto::realtime::{Message, UserPresence};
use uuid::Uuid;

use super::*;

fn member(name: &str) -> Member {
    Member {
        session_id: Uuid::new_v4(),
        user_id: Uuid::new_v4(),
        username: name.into(),
    }
}

fn party(open: bool, max_size: usize, leader: &Member) -> PartyState {
    PartyState::new(
        "p.node".into(),
        1,
        open,
        false,
        max_size,
        Label::parse("").unwrap(),
        leader.clone(),
    )
}

fn names(effects: &Effects) -> Vec<&'static str> {
    effects.sends.iter().map(|(_, m)| m.name()).collect()
}

fn to_of(effects: &Effects, name: &str) -> Vec<Uuid> {
    effects
        .sends
        .iter()
        .find(|(_, m)| m.name() == name)
        .map(|(to, _)| to.clone())
        .unwrap_or_default()
}

#[test]
fn open_party_admits_at_once_and_tells_everyone() {
    let a = member("a");
    let b = member("b");
    let mut p = party(true, 4, &a);
    let (joined, effects) = p.join(b.clone()).unwrap();
    assert_eq!(joined, Joined::Member);
    assert_eq!(names(&effects), ["party", "party_presence_event"]);
    assert_eq!(to_of(&effects, "party"), [b.session_id]);
    assert_eq!(
        to_of(&effects, "party_presence_event"),
        [a.session_id, b.session_id]
    );
    let Message::Party(described) = &effects.sends[0].1 else {
        panic!("not a party");
    };
    assert_eq!(described.presences.len(), 2);
    assert_eq!(described.leader, Some(a.wire()));
    assert_eq!(described.self_presence, Some(b.wire()));
    assert!(effects.cancel_tickets, "a new member cancels tickets");
    // Joining again changes nothing.
    let (_, again) = p.join(b.clone()).unwrap();
    assert!(again.sends.is_empty());
    assert_eq!(p.members().len(), 2);
}

#[test]
fn a_full_party_refuses_joins_and_accepts() {
    let a = member("a");
    let mut p = party(true, 2, &a);
    p.join(member("b")).unwrap();
    assert_eq!(p.join(member("c")).unwrap_err(), PartyError::Full);

    let mut closed = party(false, 2, &a);
    let b = member("b");
    let c = member("c");
    closed.join(b.clone()).unwrap();
    closed.join(c.clone()).unwrap();
    closed.accept(a.session_id, &b.wire()).unwrap();
    assert_eq!(
        closed.accept(a.session_id, &c.wire()).unwrap_err(),
        PartyError::Full
    );
}

#[test]
fn closed_party_queues_requests_for_the_leader() {
    let a = member("a");
    let b = member("b");
    let mut p = party(false, 3, &a);
    let (joined, effects) = p.join(b.clone()).unwrap();
    assert_eq!(joined, Joined::Requested);
    assert_eq!(names(&effects), ["party_join_request"]);
    assert_eq!(to_of(&effects, "party_join_request"), [a.session_id]);
    assert!(!p.is_member(b.session_id));
    // The same user again, with another session: a duplicate.
    let other_session = Member {
        session_id: Uuid::new_v4(),
        ..b.clone()
    };
    assert_eq!(
        p.join(other_session).unwrap_err(),
        PartyError::JoinRequestDuplicate
    );
    // A member's user asking again.
    let a_again = Member {
        session_id: Uuid::new_v4(),
        ..a.clone()
    };
    assert_eq!(p.join(a_again).unwrap_err(), PartyError::AlreadyMember);
    // Only the leader lists and accepts.
    assert_eq!(
        p.join_requests(b.session_id).unwrap_err(),
        PartyError::NotLeader
    );
    assert_eq!(p.join_requests(a.session_id).unwrap(), vec![b.wire()]);
    assert_eq!(
        p.accept(b.session_id, &b.wire()).unwrap_err(),
        PartyError::NotLeader
    );
    let effects = p.accept(a.session_id, &b.wire()).unwrap();
    assert_eq!(names(&effects), ["party", "party_presence_event"]);
    assert!(p.is_member(b.session_id));
    assert!(p.join_requests(a.session_id).unwrap().is_empty());
    // Accepting again: no such request.
    assert_eq!(
        p.accept(a.session_id, &b.wire()).unwrap_err(),
        PartyError::NotRequest
    );
}

#[test]
fn join_requests_are_bounded_by_max_size() {
    let a = member("a");
    let mut p = party(false, 2, &a);
    p.join(member("b")).unwrap();
    p.join(member("c")).unwrap();
    assert_eq!(
        p.join(member("d")).unwrap_err(),
        PartyError::JoinRequestsFull
    );
}

#[test]
fn a_presence_must_match_session_user_and_username() {
    let a = member("a");
    let b = member("b");
    let mut p = party(true, 4, &a);
    p.join(b.clone()).unwrap();
    let wrong_name = UserPresence {
        username: "not-b".into(),
        ..b.wire()
    };
    assert_eq!(
        p.promote(a.session_id, &wrong_name).unwrap_err(),
        PartyError::NotMember
    );
    assert_eq!(
        p.promote(b.session_id, &b.wire()).unwrap_err(),
        PartyError::NotLeader
    );
    let effects = p.promote(a.session_id, &b.wire()).unwrap();
    assert_eq!(names(&effects), ["party_leader"]);
    assert_eq!(p.leader(), &b);
    // The old leader can no longer lead.
    assert_eq!(p.close(a.session_id).unwrap_err(), PartyError::NotLeader);
}

#[test]
fn the_oldest_member_leads_when_the_leader_leaves_and_the_last_leave_closes() {
    let a = member("a");
    let b = member("b");
    let c = member("c");
    let mut p = party(true, 4, &a);
    p.join(b.clone()).unwrap();
    p.join(c.clone()).unwrap();
    let effects = p.leave(a.session_id);
    assert_eq!(names(&effects), ["party_presence_event", "party_leader"]);
    assert_eq!(
        to_of(&effects, "party_leader"),
        [b.session_id, c.session_id]
    );
    let Some((_, Message::PartyLeader(leader))) = effects.sends.get(1) else {
        panic!("no leader message");
    };
    assert_eq!(leader.presence, Some(b.wire()));
    assert_eq!(p.leader(), &b);
    assert!(!effects.closed);

    // A member that is not the leader leaves: only the event.
    let effects = p.leave(c.session_id);
    assert_eq!(names(&effects), ["party_presence_event"]);
    assert_eq!(to_of(&effects, "party_presence_event"), [b.session_id]);

    // Leaving twice does nothing.
    assert_eq!(p.leave(c.session_id), Effects::default());

    let effects = p.leave(b.session_id);
    assert!(effects.closed, "the last member's leave closes the party");
    assert!(effects.sends.is_empty());
}

#[test]
fn remove_sends_close_to_the_removed_and_refuses_the_leader_itself() {
    let a = member("a");
    let b = member("b");
    let c = member("c");
    let mut p = party(false, 4, &a);
    p.join(b.clone()).unwrap();
    p.accept(a.session_id, &b.wire()).unwrap();
    p.join(c.clone()).unwrap();
    assert_eq!(
        p.remove(a.session_id, &a.wire()).unwrap_err(),
        PartyError::RemoveSelf
    );
    assert_eq!(
        p.remove(b.session_id, &c.wire()).unwrap_err(),
        PartyError::NotLeader
    );
    // Refusing a request sends nothing.
    let effects = p.remove(a.session_id, &c.wire()).unwrap();
    assert!(effects.sends.is_empty());
    assert!(p.join_requests(a.session_id).unwrap().is_empty());
    let effects = p.remove(a.session_id, &b.wire()).unwrap();
    assert_eq!(names(&effects), ["party_close", "party_presence_event"]);
    assert_eq!(to_of(&effects, "party_close"), [b.session_id]);
    assert_eq!(to_of(&effects, "party_presence_event"), [a.session_id]);
    assert!(effects.cancel_tickets);
    assert!(!p.is_member(b.session_id));
    assert_eq!(
        p.remove(a.session_id, &b.wire()).unwrap_err(),
        PartyError::NotMember
    );
}

#[test]
fn close_tells_every_member_and_ends_the_party() {
    let a = member("a");
    let b = member("b");
    let mut p = party(true, 4, &a);
    p.join(b.clone()).unwrap();
    assert_eq!(p.close(b.session_id).unwrap_err(), PartyError::NotLeader);
    let effects = p.close(a.session_id).unwrap();
    assert!(effects.closed && effects.cancel_tickets);
    assert_eq!(to_of(&effects, "party_close"), [a.session_id, b.session_id]);
}

#[test]
fn data_goes_to_the_other_members_only_from_members() {
    let a = member("a");
    let b = member("b");
    let c = member("c");
    let mut p = party(true, 4, &a);
    p.join(b.clone()).unwrap();
    p.join(c.clone()).unwrap();
    let effects = p
        .data(b.session_id, 7, bytes::Bytes::from_static(b"hi"))
        .unwrap();
    assert_eq!(to_of(&effects, "party_data"), [a.session_id, c.session_id]);
    let Message::PartyData(data) = &effects.sends[0].1 else {
        panic!("not data");
    };
    assert_eq!((data.op_code, &data.data[..]), (7, &b"hi"[..]));
    assert_eq!(data.presence, Some(b.wire()));
    assert_eq!(
        p.data(Uuid::new_v4(), 1, bytes::Bytes::new()).unwrap_err(),
        PartyError::NotMember
    );
    // Alone in a party: nothing to send, no error.
    let solo = party(true, 2, &a);
    assert!(
        solo.data(a.session_id, 1, bytes::Bytes::new())
            .unwrap()
            .sends
            .is_empty()
    );
}

#[test]
fn labels_are_json_objects_of_at_most_2_kib() {
    assert_eq!(Label::parse("").unwrap().text, "{}");
    assert!(Label::parse(r#"{"mode":"ranked"}"#).is_ok());
    assert!(matches!(
        Label::parse("[1]").unwrap_err(),
        PartyError::LabelInvalid(_)
    ));
    assert!(matches!(
        Label::parse("{").unwrap_err(),
        PartyError::LabelInvalid(_)
    ));
    let long = format!(r#"{{"k":"{}"}}"#, "x".repeat(MAX_LABEL_BYTES));
    assert_eq!(Label::parse(&long).unwrap_err(), PartyError::LabelTooLong);
}

#[test]
fn update_changes_openness_and_tells_members() {
    let a = member("a");
    let b = member("b");
    let mut p = party(false, 4, &a);
    assert_eq!(
        p.update(b.session_id, "", true, false).unwrap_err(),
        PartyError::NotLeader
    );
    let effects = p.update(a.session_id, r#"{"x":1}"#, true, false).unwrap();
    assert_eq!(names(&effects), ["party_update"]);
    assert!(p.open);
    // Open now: b joins at once.
    assert_eq!(p.join(b).unwrap().0, Joined::Member);
}
