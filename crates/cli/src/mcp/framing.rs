//! The line framing between stdio and the rmcp service. A line from stdin that is not JSON
//! at all is answered with a JSON-RPC parse error (`-32700`, `id` null), as JSON-RPC 2.0
//! says, instead of being dropped unseen (rmcp drops such lines; well-formed JSON that is not
//! a message it answers itself, with `-32600`). Every other line passes through unchanged and
//! in order, and the service's replies go out whole, never interleaved with an error line.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

/// How much may sit in each pipe between the framing and the service.
const PIPE_BYTES: usize = 1 << 16;

/// The two tasks that carry stdio to and from the service.
pub(super) struct Framing {
    writer: JoinHandle<()>,
}

impl Framing {
    /// Waits until every reply the service wrote, and every parse error, is on stdout.
    pub(super) async fn finish(self) {
        let _ = self.writer.await;
    }
}

/// The service's transport (what it reads, where it writes), with the tasks behind it.
pub(super) fn stdio() -> ((DuplexStream, DuplexStream), Framing) {
    let (service_in, feed) = tokio::io::duplex(PIPE_BYTES);
    let (service_out, drain) = tokio::io::duplex(PIPE_BYTES);
    let (errors, replies) = unbounded_channel();
    tokio::spawn(read_stdin(feed, errors));
    let writer = tokio::spawn(write_stdout(drain, replies));
    ((service_in, service_out), Framing { writer })
}

/// Passes stdin to the service line by line; a line that is not JSON goes to `errors` as its
/// reply instead.
async fn read_stdin(mut feed: DuplexStream, errors: UnboundedSender<Vec<u8>>) {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(reply) = parse_error(&line) {
            if errors.send(reply).is_err() {
                break;
            }
        } else if feed.write_all(&line).await.is_err() {
            break;
        }
    }
    let _ = feed.shutdown().await;
}

/// Writes the service's lines and the parse errors to stdout, each line whole.
async fn write_stdout(drain: DuplexStream, mut errors: UnboundedReceiver<Vec<u8>>) {
    let mut out = tokio::io::stdout();
    let mut lines = BufReader::new(drain);
    // Bytes of a line the service has not finished: kept across a parse error sent between.
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            biased;
            reply = errors.recv(), if errors_open => match reply {
                Some(reply) => put(&mut out, &reply).await,
                None => errors_open = false,
            },
            read = lines.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    put(&mut out, &line).await;
                    line.clear();
                }
            },
        }
    }
    while let Ok(reply) = errors.try_recv() {
        put(&mut out, &reply).await;
    }
}

async fn put(out: &mut tokio::io::Stdout, line: &[u8]) {
    let _ = out.write_all(line).await;
    let _ = out.flush().await;
}

/// The JSON-RPC reply to `line` if it is not JSON at all (blank lines are no message).
fn parse_error(line: &[u8]) -> Option<Vec<u8>> {
    let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let e = serde_json::from_slice::<serde::de::IgnoredAny>(text).err()?;
    use serde_json::error::Category;
    if !matches!(e.classify(), Category::Syntax | Category::Eof) {
        return None;
    }
    let reply = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {e}")},
    });
    let mut bytes = reply.to_string().into_bytes();
    bytes.push(b'\n');
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_error;

    #[test]
    fn only_what_is_not_json_gets_a_parse_error() {
        for ok in [
            &b"{}\n"[..],
            b"  \r\n",
            b"[1, 2]\n",
            b"\xEF\xBB\xBF{\"a\":1}\r\n",
            b"",
        ] {
            assert_eq!(parse_error(ok), None, "{:?}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b"{\"jsonrpc\": \"2.0\",\n"[..],
            b"hello\n",
            b"{}}\n",
            b"\xff\n",
        ] {
            let reply = parse_error(bad).expect("a reply");
            let reply: serde_json::Value = serde_json::from_slice(&reply).expect("json");
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            assert_eq!(reply["id"], serde_json::Value::Null);
        }
    }
}
