//! Parking an idle HTTP/1 connection: its socket taken back from hyper, whose connection
//! (a read buffer of 8–16 KiB, a write buffer of 8 KiB, its state) is then dropped, so
//! that a kept-alive connection waiting for its next request costs its socket and little
//! else; a new hyper connection serves it when its next request arrives
//! (`connection.rs`). hyper has no way to hand its socket back from a kept-alive
//! connection, so the socket is duplicated first and hyper's copy closed with its
//! connection: the socket stays open (it closes with its last descriptor), and no byte
//! of it is lost, since a connection is parked only when hyper holds none
//! ([`crate::transport::deadlines::Activity::quiet_since`]).

use std::io;
use tokio::net::TcpStream;

/// The descriptor of an accepted socket, to duplicate when parking it.
#[cfg(unix)]
pub(crate) type Socket = std::os::fd::RawFd;
/// Elsewhere connections are not parked.
#[cfg(not(unix))]
pub(crate) type Socket = ();

/// The descriptor of `tcp`.
pub(crate) fn socket_of(tcp: &TcpStream) -> Socket {
    #[cfg(unix)]
    {
        std::os::fd::AsRawFd::as_raw_fd(tcp)
    }
    #[cfg(not(unix))]
    {
        let _ = tcp;
    }
}

/// A second handle on `socket`, which `owner` owns, registered with the current runtime:
/// once it is made, `owner` can be dropped without closing the socket. On an error
/// (no descriptor left) nothing changed.
#[cfg(unix)]
pub(crate) fn take_back<C>(owner: &C, socket: Socket) -> io::Result<TcpStream> {
    use std::os::fd::BorrowedFd;
    let _ = owner;
    // SAFETY: `socket` is the descriptor of the socket `owner` owns (the caller keeps them
    // together), open for as long as `owner` lives, which is past this borrow.
    let duplicate = unsafe { BorrowedFd::borrow_raw(socket) }.try_clone_to_owned()?;
    // The duplicate shares the original's file status flags (non-blocking) and socket
    // options (`TCP_NODELAY`).
    TcpStream::from_std(std::net::TcpStream::from(duplicate))
}

/// Elsewhere connections are not parked.
#[cfg(not(unix))]
pub(crate) fn take_back<C>(owner: &C, socket: Socket) -> io::Result<TcpStream> {
    let _ = (owner, socket);
    Err(io::Error::from(io::ErrorKind::Unsupported))
}
