//! The HTTP routes, one file per API family.

pub mod chat;
pub mod gemini;
pub mod health;
pub mod messages;
pub mod models;
pub mod responses;
