//! The shapes of the state a server keeps between calls, shared by every server that
//! keeps it (the gateway's kept conversations, the mock's stateful provider), so both
//! store and list a response's items as OpenAI does:
//!
//! - [`items`]: an input item as OpenAI stores it (a message item with its text as a
//!   list of parts) and the ids it gives the items it stores;
//! - [`page`]: `GET /v1/responses/{id}/input_items`, OpenAI's cursor-paged list.

pub mod items;
pub mod page;

pub use items::{assign_ids, item_prefix, normalized};
pub use page::{input_items_page, PageError};
