//! The HTTP routes, one file per API family.

pub(crate) mod chat;
pub(crate) mod embeddings;
pub(crate) mod gemini;
pub(crate) mod health;
pub(crate) mod messages;
pub(crate) mod models;
pub(crate) mod responses;
