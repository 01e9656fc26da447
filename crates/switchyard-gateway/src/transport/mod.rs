//! From sockets to requests: the accept loop and its connection cap, each connection's
//! heads, deadlines and HTTP/2 streams, the lanes connections are served on, and the
//! request guard — everything that happens before an endpoint sees a request.

pub(crate) mod call_slots;
pub(crate) mod connection;
pub(crate) mod deadlines;
pub(crate) mod guard;
pub(crate) mod head_guard;
pub(crate) mod host;
pub(crate) mod lanes;
pub(crate) mod listener;
pub(crate) mod open_connections;
pub(crate) mod open_files;
pub(crate) mod park;
pub(crate) mod path_dialect;
pub(crate) mod refusals;
pub(crate) mod tasks;
pub(crate) mod trim;
