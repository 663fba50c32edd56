//! Service URLs a job prints (Jupyter with its token, TensorBoard, Gradio, Ray's dashboard,
//! `python -m http.server`): the ones on the job's own node, to offer as tunnels.

/// A URL a job serves on its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUrl {
    pub port: u16,
    /// Path and query as printed (`/lab?token=...`), `/` when none.
    pub path: String,
}

/// Hosts that mean "the job's own node" when a job prints them.
fn on_the_node(host: &str, nodes: &[String]) -> bool {
    matches!(
        host,
        "localhost" | "127.0.0.1" | "0.0.0.0" | "[::]" | "[::1]"
    ) || nodes.iter().any(|n| {
        host == n
            || host
                .strip_prefix(n.as_str())
                .is_some_and(|r| r.starts_with('.'))
    })
}

/// Every `http(s)://HOST:PORT/...` in `lines` whose host is the job's node (or a local
/// address), newest last, each port once (its last printed path kept: a restarted Jupyter's
/// new token wins).
pub fn service_urls<'a>(lines: impl Iterator<Item = &'a str>, nodes: &[String]) -> Vec<ServiceUrl> {
    let mut out: Vec<ServiceUrl> = Vec::new();
    for line in lines {
        let mut rest = line;
        while let Some(i) = rest.find("http") {
            let tail = &rest[i..];
            rest = &rest[i + 4..];
            let Some(after) = tail
                .strip_prefix("http://")
                .or_else(|| tail.strip_prefix("https://"))
            else {
                continue;
            };
            let end = after
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | ']')
                })
                .unwrap_or(after.len());
            let url = &after[..end];
            let (hostport, path) = match url.find('/') {
                Some(p) => (&url[..p], &url[p..]),
                None => (url, "/"),
            };
            let Some((host, port)) = hostport.rsplit_once(':') else {
                continue;
            };
            let Ok(port) = port.parse::<u16>() else {
                continue;
            };
            if port == 0 || !on_the_node(host, nodes) {
                continue;
            }
            let path = path.trim_end_matches(['.', ',', ';']).to_string();
            out.retain(|u| u.port != port);
            out.push(ServiceUrl { port, path });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(text: &str) -> Vec<ServiceUrl> {
        service_urls(text.lines(), &["gpu01".to_string()])
    }

    #[test]
    fn jupyter_tensorboard_and_http_server_lines() {
        let text = "\
[I 12:00:01 ServerApp] Jupyter Server 2.14 is running at:
[I 12:00:01 ServerApp] http://gpu01:8888/lab?token=0123abcd
[I 12:00:01 ServerApp]     http://127.0.0.1:8888/lab?token=0123abcd
TensorBoard 2.16.2 at http://gpu01.cluster.local:6006/ (Press CTRL+C to quit)
Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...
see https://github.com:443/docs for help, or http://other-node:9999/
";
        assert_eq!(
            urls(text),
            vec![
                ServiceUrl {
                    port: 8888,
                    path: "/lab?token=0123abcd".into()
                },
                ServiceUrl {
                    port: 6006,
                    path: "/".into()
                },
                ServiceUrl {
                    port: 8000,
                    path: "/".into()
                },
            ]
        );
    }

    #[test]
    fn nothing_from_noise_or_odd_bytes() {
        assert!(urls("http:// http://gpu01 http://gpu01:port/ http://gpu01:99999/").is_empty());
        assert!(urls("\u{1b}[31mhttp\u{0}://gpu01:1/ ✓").is_empty());
    }
}
