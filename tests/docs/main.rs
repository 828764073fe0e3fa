//! The documents: README.md, the book in docs/ (built by mdBook from
//! scripts/test.sh), benches/README.md and the Helm chart's README. Their
//! links resolve, their commands and configs go through the code they
//! document, and the model-config reference names every key the config
//! loader takes.

mod blocks;
mod links;
mod markdown;
mod reference;
