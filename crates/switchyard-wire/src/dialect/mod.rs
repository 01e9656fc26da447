//! One module per wire dialect, each a pure two-way [`Codec`](crate::Codec).

pub mod chat;
pub mod gemini;
pub mod messages;
pub mod responses;
