//! Stored groups as Nakama's wire shape.

use metafi_proto::api;
use metafi_proto::format_timestamp_ms;

/// A stored group as `api.Group`.
pub fn group_view(group: metafi_storage::Group) -> api::Group {
    api::Group {
        id: group.id.to_string(),
        creator_id: group.creator_id.to_string(),
        name: group.name,
        description: group.description,
        lang_tag: group.lang_tag,
        metadata: group.metadata,
        avatar_url: group.avatar_url,
        open: group.open,
        edge_count: group.edge_count,
        max_count: group.max_count,
        create_time: format_timestamp_ms(group.create_time_ms),
        update_time: format_timestamp_ms(group.update_time_ms),
    }
}
