//! The example native modules of `examples/native` (`echo_native`, `get_match_native`,
//! `transport_seed_create`, `transport_seed_stats` and their match handlers): registered here and
//! nowhere else, and only when the binary is built with the `examples` feature. A plain
//! `cargo build --release -p metafi-server` links none of them; tests, benchmarks and the
//! documented benchmark commands turn the feature on (`--features examples`, `--all-features`).

use metafi_runtime::RuntimeBuilder;

/// Adds the example native modules to a runtime being built, when the `examples` feature is on.
pub(crate) trait ExampleModules {
    /// The builder with the examples registered (feature `examples`), or unchanged.
    fn example_modules(self) -> Self;
}

impl ExampleModules for RuntimeBuilder {
    #[cfg(feature = "examples")]
    fn example_modules(self) -> Self {
        self.native(std::sync::Arc::new(metafi_examples_native::Examples))
    }

    #[cfg(not(feature = "examples"))]
    fn example_modules(self) -> Self {
        self
    }
}
