//! Diagnostics for the libraries' C ABIs: a fatal or warning line on stderr.

use std::io::Write;

/// Writes `text` and a newline to stderr in a single `write(2)`, so that the lines of
/// ranks failing together never interleave (a pipe write of at most `PIPE_BUF` bytes is
/// atomic). Errors writing are ignored: there is nowhere left to report them.
pub fn line(text: &str) {
    let mut buf = String::with_capacity(text.len() + 1);
    buf.push_str(text);
    buf.push('\n');
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}
