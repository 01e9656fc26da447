//! The connection cap against the process's open-file limit: every connection being
//! served can hold two descriptors (its socket, and the upstream connection its call
//! uses), besides those the gateway always needs, so a cap above what the limit allows
//! would end in `accept` failing with "too many open files" for everyone, and calls
//! failing to reach their upstreams. The cap is lowered to fit, and the operator told.

/// Descriptors kept for everything else: the listening socket, the store's files, the
/// in-process mock, DNS, pooled upstream connections beyond one per call, and the
/// connections answered 503 at the cap ([`crate::transport::listener`]'s overflow).
const RESERVED: u64 = 128;

/// The cap the listener applies: the configured one, or less to fit the open-file limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectionCap {
    /// `listen.max_connections`.
    pub configured: usize,
    /// What is applied.
    pub effective: usize,
    /// The soft `RLIMIT_NOFILE`, when known.
    pub open_file_limit: Option<u64>,
}

impl ConnectionCap {
    /// The cap for `configured` connections under this process's limit.
    pub(crate) fn for_process(configured: usize) -> ConnectionCap {
        ConnectionCap::under(configured, open_file_limit())
    }

    fn under(configured: usize, limit: Option<u64>) -> ConnectionCap {
        let fits = limit.map(|l| (l.saturating_sub(RESERVED) / 2).max(1));
        let effective = match fits {
            Some(f) if (f as u128) < configured as u128 => f as usize,
            _ => configured,
        };
        ConnectionCap {
            configured,
            effective,
            open_file_limit: limit,
        }
    }

    /// `configured` calls in flight, lowered to fit the open-file limit as connections
    /// are (each call can hold its upstream connection's descriptor).
    pub(crate) fn fit(&self, configured: usize) -> usize {
        match self.open_file_limit {
            Some(l) => configured.min((l.saturating_sub(RESERVED) / 2).max(1) as usize),
            None => configured,
        }
    }

    /// What to tell the operator when the cap was lowered.
    pub(crate) fn warning(&self) -> Option<String> {
        (self.effective < self.configured).then(|| {
            format!(
                "serving at most {} connections, not listen.max_connections = {}: the open-file limit is {} \
                 (each connection can hold two descriptors, its socket and its upstream's, and {RESERVED} are kept \
                 for the rest); raise it (`ulimit -n`) to serve more",
                self.effective,
                self.configured,
                self.open_file_limit.unwrap_or(0)
            )
        })
    }
}

#[cfg(unix)]
// `rlim_t` is u64 on Linux and macOS but not everywhere.
#[allow(clippy::unnecessary_cast)]
fn open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given, which lives for the call.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as u64)
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_fits_the_open_file_limit() {
        let roomy = ConnectionCap::under(1024, Some(65536));
        assert_eq!(roomy.effective, 1024);
        assert_eq!(roomy.warning(), None);
        let tight = ConnectionCap::under(1024, Some(1024));
        assert_eq!(tight.effective, 448);
        assert!(tight
            .warning()
            .unwrap()
            .contains("the open-file limit is 1024"));
        assert_eq!(ConnectionCap::under(1024, Some(10)).effective, 1);
        assert_eq!(ConnectionCap::under(7, None).effective, 7);
        assert!(ConnectionCap::for_process(1).effective == 1);
    }
}
