//! Ending on a signal: Ctrl-C (SIGINT), SIGTERM and SIGHUP run a cleanup, then end the
//! process with 128 + the signal's number (130, 143, 129), the status a shell reports for a
//! command the signal ended, so that scripts can tell an interrupted run from a failed one.

/// Runs `cleanup` (on a thread of its own) when SIGINT, SIGTERM or SIGHUP arrives, says which
/// on stderr, and exits with 128 + its number. A signal ignored when the program starts stays
/// ignored: `nohup bitonic …` survives a hang-up, a background job of a script Ctrl-C. Call
/// once, at the start.
#[cfg(unix)]
pub fn exit_on_signals(cleanup: fn()) {
    use std::sync::atomic::{AtomicI32, Ordering};
    /// The pipe's write end, for the handler: a signal's number is written to it as a byte.
    static WRITE_END: AtomicI32 = AtomicI32::new(-1);

    extern "C" fn note(signal: libc::c_int) {
        let byte = signal as u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is one byte on this stack.
        unsafe {
            libc::write(
                WRITE_END.load(Ordering::Relaxed),
                (&byte as *const u8).cast(),
                1,
            )
        };
    }

    let mut ends = [0 as libc::c_int; 2];
    // SAFETY: pipe(2) fills the two descriptors of `ends`; they are marked close-on-exec so
    // that no child process holds them.
    let made = unsafe {
        libc::pipe(ends.as_mut_ptr()) == 0
            && ends
                .iter()
                .all(|&fd| libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0)
    };
    if !made {
        return; // no pipe, no handlers: the signals keep their default action (they end the process)
    }
    WRITE_END.store(ends[1], Ordering::Relaxed);
    let read_end = ends[0];
    std::thread::spawn(move || {
        let mut byte = 0u8;
        // SAFETY: reading one byte into `byte`; retried when a signal interrupts the read.
        while unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) } != 1 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
        let signal = libc::c_int::from(byte);
        cleanup();
        let what = match signal {
            libc::SIGINT => "interrupted",
            libc::SIGTERM => "terminated",
            _ => "hung up",
        };
        eprintln!("bitonic: {what}");
        std::process::exit(128 + signal);
    });
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction(2) with zeroed (then filled) structures; `note` only writes to
        // the pipe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Elsewhere: Ctrl-C runs `cleanup` and exits with 130.
#[cfg(not(unix))]
pub fn exit_on_signals(cleanup: fn()) {
    let handler = move || {
        cleanup();
        eprintln!("bitonic: interrupted");
        std::process::exit(130);
    };
    // Fails only when a handler is already set: then that one stays.
    ctrlc::set_handler(handler).ok();
}
