//! Everything the command line prints goes through here, so that every command behaves the same
//! when its output goes away:
//!
//! * **standard output** is written with `outln!` / [`stdout_error`], which turn a failed write
//!   into an ordinary [`Error`] (never a panic, as `println!` does). A closed pipe
//!   (`dprp query … | head -1`) ends the program quietly, like `ls` or `cat`: any partial output
//!   file is removed as the error unwinds, nothing is printed, and the process ends by SIGPIPE
//!   (status 141 in a shell), see [`exit_on_broken_pipe`];
//! * **standard error** carries warnings and notes ([`warn`], [`note`]); a failed write there is
//!   ignored (there is nowhere left to report it);
//! * **signals**: SIGINT, SIGTERM and SIGHUP remove every temporary output not yet in place and end
//!   the program with one line on standard error and status 128 + the signal number
//!   ([`install_signal_handlers`]).

use std::io::Write;

use dprp::error::{Error, Front, Result};

/// `println!` that returns a [`Result`] instead of panicking when standard output fails.
macro_rules! outln {
    () => {
        $crate::output::print_fmt(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Write formatted text to standard output, the options it names spelt as flags ([`cli_text`]).
pub fn print_fmt(args: std::fmt::Arguments) -> Result<()> {
    match args.as_str() {
        Some(s) => print_str(s),
        None => print_str(&args.to_string()),
    }
}

/// Write text to standard output, the options it names spelt as flags ([`cli_text`]).
pub fn print_str(s: &str) -> Result<()> {
    std::io::stdout()
        .lock()
        .write_all(cli_text(s).as_bytes())
        .map_err(stdout_error)
}

/// Text from the library as the command shows it: the library names an option by its key
/// (`‹min_norm›`, [`dprp::error::field`]) and the command spells it as its flag (`--min-norm`).
/// Everything the command prints passes through here.
pub fn cli_text(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(dprp::error::FIELD_MARKS.0) {
        Front::Cli.render(s).into()
    } else {
        s.into()
    }
}

/// The error for a failed write to standard output.
pub fn stdout_error(e: std::io::Error) -> Error {
    Error::io("standard output", e)
}

/// The error for a failed JSON write to standard output (keeps the I/O error's kind, so a closed
/// pipe is still recognised as one).
pub fn json_error(e: serde_json::Error) -> Error {
    stdout_error(e.into())
}

/// A warning on standard error (`warning: …`); a failure to write it is ignored.
pub fn warn(msg: impl std::fmt::Display) {
    let msg = msg.to_string();
    let _ = writeln!(std::io::stderr(), "warning: {}", cli_text(&msg));
}

/// A line on standard error; a failure to write it is ignored.
pub fn note(msg: impl std::fmt::Display) {
    let msg = msg.to_string();
    let _ = writeln!(std::io::stderr(), "{}", cli_text(&msg));
}

/// Whether an error is a failed write to standard output.
pub fn is_stdout_error(e: &Error) -> bool {
    matches!(e, Error::Io { path, .. } if path.as_os_str() == "standard output")
}

/// Print the report of a command whose output files are complete and in place: a failed write
/// to standard output no longer fails the command (the outputs exist; a failure status would
/// invite running it again — a second release of the same rows). A closed pipe ends the report
/// quietly; another failure (a full disk, a closed descriptor) leaves a warning naming the
/// outputs. Without outputs (the report is all the command makes) a failure stays one.
pub fn report_written(
    outputs: &[&std::path::Path],
    print: impl FnOnce() -> Result<()>,
) -> Result<()> {
    match print() {
        Err(e) if is_stdout_error(&e) && !outputs.is_empty() => {
            if !is_broken_pipe(&e) {
                let names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
                warn(format_args!(
                    "{} written and complete, but the report could not be printed ({e})",
                    names.join(", ")
                ));
            }
            Ok(())
        }
        r => r,
    }
}

/// Whether an error is a write to a closed pipe.
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// End the process as a program killed by SIGPIPE does (the convention `ls`, `cat` and `yes`
/// follow, status 141 in a shell). Rust ignores SIGPIPE so that writes fail with an error
/// instead; by the time this runs that error has unwound and removed any partial output.
pub fn exit_on_broken_pipe() -> ! {
    #[cfg(unix)]
    {
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
    }
    std::process::exit(141)
}

/// Catch SIGINT, SIGTERM and SIGHUP on a watcher thread: remove every temporary output not yet
/// committed ([`dprp::atomic::remove_pending`]), print one line and exit with 128 + the signal.
pub fn install_signal_handlers() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            // Without the handler a signal still ends the process (the default action); only
            // the removal of temporary files is lost. Say so rather than fail the command.
            warn(
                "could not install signal handlers; an interrupted run may leave .dprp-tmp-* files",
            );
            return;
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let (_lock, removed) = dprp::atomic::remove_pending();
                let name = match sig {
                    SIGINT => "SIGINT",
                    SIGTERM => "SIGTERM",
                    _ => "SIGHUP",
                };
                let what = if removed.is_empty() {
                    "no output was written".to_string()
                } else {
                    let names: Vec<String> =
                        removed.iter().map(|p| p.display().to_string()).collect();
                    format!(
                        "{} not written (the partial file was removed)",
                        names.join(", ")
                    )
                };
                let _ = writeln!(std::io::stderr(), "error: interrupted by {name}; {what}");
                // Exit while holding the registry's lock: nothing can be committed after the
                // clean-up.
                std::process::exit(128 + sig);
            }
        });
    }
}
