//! The in-memory remote: a map behind a mutex, shared by name within a process, so a test
//! can push from one store and clone into another as over a real remote.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use super::{Listed, Put, Remote};
use crate::RemoteError;

type Objects = Arc<Mutex<BTreeMap<String, Vec<u8>>>>;

/// An in-memory remote.
#[derive(Debug, Clone, Default)]
pub struct MemoryRemote {
    name: String,
    objects: Objects,
}

impl MemoryRemote {
    /// The process's remote of this name (made empty on first use).
    pub fn named(name: &str) -> MemoryRemote {
        static ALL: OnceLock<Mutex<BTreeMap<String, Objects>>> = OnceLock::new();
        let mut all = lock(ALL.get_or_init(Mutex::default));
        let objects = all.entry(name.to_string()).or_default();
        MemoryRemote {
            name: name.to_string(),
            objects: Arc::clone(objects),
        }
    }

    fn objects(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        lock(&self.objects)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Remote for MemoryRemote {
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError> {
        let mut objects = self.objects();
        if objects.contains_key(key) {
            return Ok(Put::Exists);
        }
        objects.insert(key.to_string(), body.to_vec());
        Ok(Put::Created)
    }

    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError> {
        let objects = self.objects();
        let Some(bytes) = objects.get(key) else {
            return Ok(None);
        };
        Ok(Some(match range {
            Some(r) => super::file::cut(bytes, r),
            None => bytes.clone(),
        }))
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        let objects = self.objects();
        let found = objects.range(prefix.to_string()..);
        Ok(found
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(key, v)| Listed {
                key: key.clone(),
                size: v.len() as u64,
            })
            .collect())
    }

    fn delete(&self, key: &str) -> Result<(), RemoteError> {
        self.objects().remove(key);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("memory://{}", self.name)
    }
}
