//! Channel messages: sender-only edits, ordered listing, cursor paging both ways.

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{ChannelMessage, Direction, MessagePage, Storage, StorageError};

const CHANNEL: &str = "2...general";

fn message(sender: Uuid, create_time_ms: i64) -> ChannelMessage {
    ChannelMessage {
        id: Uuid::new_v4(),
        channel_id: CHANNEL.into(),
        code: 0,
        sender_id: sender,
        username: "sender".into(),
        content: format!("{{\"t\":{create_time_ms}}}"),
        create_time_ms,
        update_time_ms: create_time_ms,
    }
}

/// Inserts `count` messages, some sharing a create time, and returns them in listing order.
async fn seed(store: &dyn Storage, count: usize) -> Vec<ChannelMessage> {
    let sender = Uuid::new_v4();
    let mut all = Vec::new();
    for n in 0..count {
        // Pairs share a timestamp so that the id breaks ties.
        let m = message(sender, NOW + (n / 2) as i64);
        store.insert_message(m.clone()).await.expect("insert");
        all.push(m);
    }
    all.sort_by_key(|m| (m.create_time_ms, m.id));
    all
}

fn ids(messages: &[ChannelMessage]) -> Vec<Uuid> {
    messages.iter().map(|m| m.id).collect()
}

async fn page(
    store: &dyn Storage,
    direction: Direction,
    limit: usize,
    cursor: Option<&str>,
) -> MessagePage {
    store
        .list_messages(CHANNEL, direction, limit, cursor)
        .await
        .expect("list")
}

pub async fn message_update_and_remove_by_sender_only(f: &dyn Fixture) {
    let store = f.open().await;
    let sender = Uuid::new_v4();
    let stranger = Uuid::new_v4();
    let original = message(sender, NOW);
    store
        .insert_message(original.clone())
        .await
        .expect("insert");
    let content = "{\"t\":\"edited\"}".to_owned();
    let by_stranger = store
        .update_message(CHANNEL, original.id, stranger, content.clone(), NOW + 1)
        .await;
    assert!(
        matches!(by_stranger, Err(StorageError::NotFound { .. })),
        "{by_stranger:?}"
    );
    let elsewhere = store
        .update_message("other", original.id, sender, content.clone(), NOW + 1)
        .await;
    assert!(
        matches!(elsewhere, Err(StorageError::NotFound { .. })),
        "{elsewhere:?}"
    );
    let updated = store
        .update_message(CHANNEL, original.id, sender, content.clone(), NOW + 1)
        .await
        .expect("update");
    let expected = ChannelMessage {
        content: content.clone(),
        update_time_ms: NOW + 1,
        ..original.clone()
    };
    assert_eq!(updated, expected);
    assert_eq!(
        page(&*store, Direction::Forward, 10, None).await.messages,
        vec![expected.clone()]
    );

    let by_stranger = store.remove_message(CHANNEL, original.id, stranger).await;
    assert!(
        matches!(by_stranger, Err(StorageError::NotFound { .. })),
        "{by_stranger:?}"
    );
    let removed = store
        .remove_message(CHANNEL, original.id, sender)
        .await
        .expect("remove");
    assert_eq!(removed, expected);
    assert!(
        page(&*store, Direction::Forward, 10, None)
            .await
            .messages
            .is_empty()
    );
    let again = store.remove_message(CHANNEL, original.id, sender).await;
    assert!(
        matches!(again, Err(StorageError::NotFound { .. })),
        "{again:?}"
    );
    store.close().await;
}

pub async fn message_list_forward_and_backward(f: &dyn Fixture) {
    let store = f.open().await;
    let all = seed(&*store, 6).await;
    let other = ChannelMessage {
        channel_id: "other".into(),
        ..message(Uuid::new_v4(), NOW)
    };
    store.insert_message(other).await.expect("insert");
    let forward = page(&*store, Direction::Forward, 10, None).await;
    assert_eq!(ids(&forward.messages), ids(&all));
    assert_eq!((forward.next_cursor, forward.prev_cursor), (None, None));
    let backward = page(&*store, Direction::Backward, 10, None).await;
    let mut reversed = ids(&all);
    reversed.reverse();
    assert_eq!(ids(&backward.messages), reversed);
    let first = page(&*store, Direction::Forward, 2, None).await;
    assert_eq!(ids(&first.messages), ids(&all[..2]));
    assert!(first.next_cursor.is_some() && first.prev_cursor.is_none());
    store.close().await;
}

pub async fn message_paging_both_ways(f: &dyn Fixture) {
    let store = f.open().await;
    let all = seed(&*store, 23).await;
    for direction in [Direction::Forward, Direction::Backward] {
        let mut expected = ids(&all);
        if direction == Direction::Backward {
            expected.reverse();
        }
        // Walk to the end with next cursors.
        let mut pages = vec![page(&*store, direction, 5, None).await];
        while let Some(next) = pages.last().and_then(|p| p.next_cursor.clone()) {
            pages.push(page(&*store, direction, 5, Some(&next)).await);
            assert!(pages.len() < 20, "paging does not terminate");
        }
        let walked: Vec<Uuid> = pages.iter().flat_map(|p| ids(&p.messages)).collect();
        assert_eq!(
            walked, expected,
            "{direction:?}: no gaps, no dupes, in order"
        );
        assert_eq!(pages.len(), 5);
        // Walk back from the last page with previous cursors: the same pages, in reverse.
        let mut current = pages.last().cloned().expect("pages");
        for earlier in pages.iter().rev().skip(1) {
            let prev = current.prev_cursor.clone().expect("a previous page exists");
            current = page(&*store, direction, 5, Some(&prev)).await;
            assert_eq!(
                ids(&current.messages),
                ids(&earlier.messages),
                "{direction:?}"
            );
            assert!(current.next_cursor.is_some());
        }
        assert_eq!(
            current.prev_cursor, None,
            "{direction:?}: the first page has no previous"
        );
        // And forward again from a page reached backwards.
        let next = current.next_cursor.clone().expect("next");
        let second = page(&*store, direction, 5, Some(&next)).await;
        assert_eq!(ids(&second.messages), ids(&pages[1].messages));
    }
    store.close().await;
}

pub async fn message_invalid_cursor(f: &dyn Fixture) {
    let store = f.open().await;
    seed(&*store, 4).await;
    let garbage = store
        .list_messages(CHANNEL, Direction::Forward, 2, Some("%%%"))
        .await;
    assert!(
        matches!(garbage, Err(StorageError::Invalid { .. })),
        "{garbage:?}"
    );
    let forward = page(&*store, Direction::Forward, 2, None).await;
    let cursor = forward.next_cursor.expect("cursor");
    let flipped = store
        .list_messages(CHANNEL, Direction::Backward, 2, Some(&cursor))
        .await;
    assert!(
        matches!(flipped, Err(StorageError::Invalid { .. })),
        "{flipped:?}"
    );
    let elsewhere = store
        .list_messages("other", Direction::Forward, 2, Some(&cursor))
        .await;
    assert!(
        matches!(elsewhere, Err(StorageError::Invalid { .. })),
        "{elsewhere:?}"
    );
    store.close().await;
}
