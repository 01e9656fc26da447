//! Opaque provider state carried across dialects in the client's own fields: a versioned
//! envelope, signed with the gateway's state key, that names the dialect and backend the
//! state came from. See docs/gateway.md, "State across dialects".

mod carry;
mod format;
mod key;

pub(crate) use carry::{may_carry, open_request, seal_reply, StreamSealer};
pub use key::{StateKey, STATE_KEY_ENV, STATE_KEY_FILE};
