//! The group's chat channel side of membership changes, as Nakama's `core_group.go`: every
//! join (of an open group), add, leave, kick, promote, ban and demote writes a system message
//! (codes 3–9, sender and username the affected user, content `{}`, persistent) to the
//! group's channel history and delivers it to the sessions present in the channel; a user who
//! left, was kicked or banned is taken out of the channel, so it receives its messages no more.

use metafi_storage::ChannelMessage;
use uuid::Uuid;

use super::Groups;
use crate::ChannelId;
use crate::channels::message_view;

impl Groups {
    /// Writes and delivers one system message per `(user, code)` (in that order), then takes
    /// the users of `removed` out of the channel. The membership change already happened: a
    /// message that cannot be stored is logged and still delivered.
    pub(super) async fn announce(&self, group_id: Uuid, events: &[(Uuid, i32)], removed: &[Uuid]) {
        let channel = ChannelId::Group { group_id };
        if !events.is_empty() {
            let ids: Vec<Uuid> = events.iter().map(|(user, _)| *user).collect();
            let users = match self.store.users_by_id(&ids).await {
                Ok(users) => users,
                Err(e) => {
                    tracing::warn!(error = %e, %group_id, "could not read usernames for group channel messages");
                    Vec::new()
                }
            };
            for &(user_id, code) in events {
                let username = users
                    .iter()
                    .find(|u| u.id == user_id)
                    .map(|u| u.username.clone())
                    .unwrap_or_default();
                let now = self.clock.now_ms();
                let message = ChannelMessage {
                    // Time-ordered, like chat messages: history sorts by (create_time, id).
                    id: Uuid::now_v7(),
                    channel_id: channel.to_string(),
                    code,
                    sender_id: user_id,
                    username,
                    content: "{}".to_owned(),
                    create_time_ms: now,
                    update_time_ms: now,
                };
                if let Err(e) = self.store.insert_message(message.clone()).await {
                    tracing::warn!(error = %e, %group_id, code, "could not store a group channel message");
                }
                self.channel_push
                    .deliver(&channel, message_view(&channel, message, true));
            }
        }
        for &user_id in removed {
            self.channel_push.remove_user(&channel, user_id);
        }
    }

    /// Takes every session out of a deleted group's channel.
    pub(super) fn close_channel(&self, group_id: Uuid) {
        self.channel_push.close(&ChannelId::Group { group_id });
    }
}

#[cfg(test)]
#[path = "channel_tests.rs"]
mod tests;
