//! Action files: generated recordings survive the text format; hostile text never panics.

mod common;

use common::pool;
use metafi_world::bots::{Behaviour, BotSpec, generate};
use metafi_world::{ActionFile, Map, map_gen};
use proptest::prelude::*;

#[test]
fn generated_recordings_round_trip_through_the_text_format() {
    let p = pool(2);
    let map = Map::build(map_gen::arena(3), &p).expect("map");
    for behaviour in Behaviour::ALL {
        let spec = BotSpec {
            behaviour,
            bots: 12,
            duration_ms: 2000,
            command_ms: 30,
            seed: 5,
        };
        let file = generate(&map, &spec, &p);
        let text = file.to_string();
        assert_eq!(
            ActionFile::parse(&text).expect("own output parses"),
            file,
            "{behaviour:?}"
        );
        assert!(file.bots.iter().all(|b| b.commands.len() == 67));
    }
}

#[test]
fn hunters_shoot_and_campers_stand_still() {
    let p = pool(2);
    let map = Map::build(map_gen::arena(3), &p).expect("map");
    let spec = |behaviour| BotSpec {
        behaviour,
        bots: 40,
        duration_ms: 6000,
        command_ms: 30,
        seed: 8,
    };
    let hunt = generate(&map, &spec(Behaviour::Hunt), &p);
    let attacks = |f: &ActionFile| {
        f.bots
            .iter()
            .flat_map(|b| &b.commands)
            .filter(|c| c.cmd.buttons.contains(metafi_world::Buttons::ATTACK))
            .count()
    };
    assert!(attacks(&hunt) > hunt.command_count() / 10);
    let camp = generate(&map, &spec(Behaviour::Camp), &p);
    let idle_at_end = camp
        .bots
        .iter()
        .filter(|b| b.commands.last().is_some_and(|c| c.cmd.forward == 0))
        .count();
    assert!(
        idle_at_end > camp.bots.len() / 2,
        "{idle_at_end} campers settled"
    );
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics_the_parser(text in any::<String>()) {
        let _ = ActionFile::parse(&text);
    }

    #[test]
    fn almost_valid_files_never_panic_the_parser(body in "(bot [0-9]{1,3} [a-z]{1,5} [-0-9.e]{1,8} [-0-9.]{1,6} [0-9.]{1,4} [0-9]{1,6}\n|[0-9]{1,11} [0-9]{1,4} [-0-9]{1,6} [-0-9]{1,6} [-0-9]{1,6} [-0-9]{1,6} [-0-9]{1,6} [-aj]{1,3} (mg|rl|xx)( 1)?\n|# [ -~]{0,20}\n){0,30}") {
        let text = format!("metafi-actions 1\n{body}");
        if let Ok(file) = ActionFile::parse(&text) {
            prop_assert_eq!(ActionFile::parse(&file.to_string()).ok(), Some(file));
        }
    }
}
