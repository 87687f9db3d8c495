//! Who is online, in Nakama's sense: a user with at least one socket on this node that appears
//! online (connected with `status=true`, or that set a status with `status_update` since). A
//! socket connected without `status` is not online, as in Nakama, whose status registry fills
//! `User.online` from the status stream's presences.

use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

use crate::stream::StreamKey;
use crate::tracker::Tracker;

/// [`metafi_core::OnlineUsers`] read from the presences of each user's status stream.
pub struct StatusOnline {
    tracker: Arc<dyn Tracker>,
}

impl StatusOnline {
    pub fn new(tracker: Arc<dyn Tracker>) -> StatusOnline {
        StatusOnline { tracker }
    }
}

impl fmt::Debug for StatusOnline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusOnline").finish_non_exhaustive()
    }
}

impl metafi_core::OnlineUsers for StatusOnline {
    fn is_online(&self, user_id: Uuid) -> bool {
        !self
            .tracker
            .session_ids(&StreamKey::status(user_id))
            .is_empty()
    }
}
