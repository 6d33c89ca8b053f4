//! Who may call what: endpoint groups restricted to callers holding a key.
//!
//! Every endpoint belongs to one of Triton's groups ([`Group`]). A
//! restriction (`--http-restricted-api` / `--grpc-restricted-protocol`,
//! `GROUPS:KEY=VALUE`) says that calls to those groups must carry the HTTP
//! header (or gRPC metadata entry) `KEY` with value `VALUE`. A call without
//! it, or with another value, is refused before anything runs: 403 over HTTP,
//! PERMISSION_DENIED over gRPC, with a message naming the group and the key
//! (never the value). Values are compared in constant time and never logged
//! (`Debug` shows them as `***`).

use std::fmt;

/// Triton's endpoint groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// Server live and ready, model ready.
    Health,
    /// Server and model metadata.
    Metadata,
    /// Inference (and streaming inference).
    Inference,
    /// System and CUDA shared memory.
    SharedMemory,
    /// Model configuration.
    ModelConfig,
    /// The model repository: index, load, unload.
    ModelRepository,
    /// Model statistics.
    Statistics,
    /// Trace settings.
    Trace,
    /// Log settings.
    Logging,
}

impl Group {
    pub const ALL: [Group; 9] = [
        Group::Health,
        Group::Metadata,
        Group::Inference,
        Group::SharedMemory,
        Group::ModelConfig,
        Group::ModelRepository,
        Group::Statistics,
        Group::Trace,
        Group::Logging,
    ];

    /// The group's name, as the flags spell it.
    pub fn name(self) -> &'static str {
        match self {
            Group::Health => "health",
            Group::Metadata => "metadata",
            Group::Inference => "inference",
            Group::SharedMemory => "shared-memory",
            Group::ModelConfig => "model-config",
            Group::ModelRepository => "model-repository",
            Group::Statistics => "statistics",
            Group::Trace => "trace",
            Group::Logging => "logging",
        }
    }

    pub fn from_name(name: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.name() == name)
    }

    /// The group of an HTTP route, given as its template (`/v2/models/{name}/infer`);
    /// `None` for a path that is no endpoint.
    pub fn of_http_route(route: &str) -> Option<Group> {
        let segments: Vec<&str> = route.trim_start_matches('/').split('/').collect();
        let rest = match segments.split_first() {
            Some((&"v2", rest)) => rest,
            _ => return None,
        };
        Some(match rest {
            [] => Group::Metadata,
            ["health", ..] => Group::Health,
            ["repository", ..] => Group::ModelRepository,
            ["systemsharedmemory" | "cudasharedmemory", ..] => Group::SharedMemory,
            ["trace", ..] => Group::Trace,
            ["logging"] => Group::Logging,
            ["models", "stats"] => Group::Statistics,
            ["models", _] | ["models", _, "versions", _] => Group::Metadata,
            ["models", .., "trace", "setting"] => Group::Trace,
            ["models", .., last] => match *last {
                "ready" => Group::Health,
                "infer" | "generate" | "generate_stream" => Group::Inference,
                "stats" => Group::Statistics,
                "config" => Group::ModelConfig,
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The group of a gRPC method of `inference.GRPCInferenceService`, given as
    /// its path (`/inference.GRPCInferenceService/ModelInfer`); `None` for another path.
    pub fn of_grpc_path(path: &str) -> Option<Group> {
        let method = path.strip_prefix("/inference.GRPCInferenceService/")?;
        Some(match method {
            "ServerLive" | "ServerReady" | "ModelReady" => Group::Health,
            "ServerMetadata" | "ModelMetadata" => Group::Metadata,
            "ModelInfer" | "ModelStreamInfer" => Group::Inference,
            "ModelConfig" => Group::ModelConfig,
            "ModelStatistics" => Group::Statistics,
            "RepositoryIndex" | "RepositoryModelLoad" | "RepositoryModelUnload" => Group::ModelRepository,
            "SystemSharedMemoryStatus"
            | "SystemSharedMemoryRegister"
            | "SystemSharedMemoryUnregister"
            | "CudaSharedMemoryStatus"
            | "CudaSharedMemoryRegister"
            | "CudaSharedMemoryUnregister" => Group::SharedMemory,
            "TraceSetting" => Group::Trace,
            "LogSettings" => Group::Logging,
            _ => return None,
        })
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A secret value: compared in constant time, never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// Whether `offered` is this value, in time that depends only on the lengths.
    pub fn matches(&self, offered: &[u8]) -> bool {
        constant_time_eq(self.0.as_bytes(), offered)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Byte equality whose time depends on the lengths only, not on where the bytes differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        difference |= std::hint::black_box(x ^ y);
    }
    difference == 0
}

/// Groups that need a key: header (metadata) `key`, value `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restriction {
    pub groups: Vec<Group>,
    pub key: String,
    pub value: Secret,
}

impl Restriction {
    /// Parses `GROUP[,GROUP...]:KEY=VALUE`.
    pub fn parse(spec: &str) -> Result<Restriction, String> {
        let (groups, pair) =
            spec.split_once(':').ok_or_else(|| format!("restriction `{}` is not GROUPS:KEY=VALUE", redact(spec)))?;
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("restriction `{}` has no `=` between the key and its value", redact(spec)))?;
        let key = key.trim().to_ascii_lowercase();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(format!(
                "restriction key `{key}` must be a header name (letters, digits, `-`, `_`), in `{}`",
                redact(spec)
            ));
        }
        if value.is_empty() {
            return Err(format!("restriction `{}` has an empty value for key `{key}`", redact(spec)));
        }
        let groups = groups
            .split(',')
            .map(|g| {
                Group::from_name(g.trim()).ok_or_else(|| {
                    let known: Vec<&str> = Group::ALL.iter().map(|g| g.name()).collect();
                    format!("unknown endpoint group `{}` (groups: {})", g.trim(), known.join(", "))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Restriction { groups, key, value: Secret::new(value) })
    }
}

/// A restriction spec with its value hidden, for error messages.
fn redact(spec: &str) -> String {
    match spec.split_once('=') {
        Some((head, _)) => format!("{head}=***"),
        None => spec.to_string(),
    }
}

/// The restrictions of one protocol: at most one per group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restrictions {
    by_group: Vec<(Group, String, Secret)>,
}

impl Restrictions {
    /// The restrictions of the given specs; a group named twice is an error.
    pub fn new(list: impl IntoIterator<Item = Restriction>) -> Result<Restrictions, String> {
        let mut by_group: Vec<(Group, String, Secret)> = Vec::new();
        for restriction in list {
            for group in restriction.groups {
                if by_group.iter().any(|(g, _, _)| *g == group) {
                    return Err(format!("endpoint group `{group}` is restricted twice"));
                }
                by_group.push((group, restriction.key.clone(), restriction.value.clone()));
            }
        }
        Ok(Restrictions { by_group })
    }

    pub fn is_empty(&self) -> bool {
        self.by_group.is_empty()
    }

    /// Whether a call to `group` may run, given how to read its headers:
    /// `Err` with the refusal's message when it may not.
    pub fn check<'a>(&self, group: Group, header: impl Fn(&str) -> Option<&'a [u8]>) -> Result<(), String> {
        let Some((_, key, value)) = self.by_group.iter().find(|(g, _, _)| *g == group) else {
            return Ok(());
        };
        match header(key) {
            Some(offered) if value.matches(offered) => Ok(()),
            _ => Err(format!(
                "the {group} endpoints are restricted: send the `{key}` header with the value the server was given"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_name_reads_back() {
        for group in Group::ALL {
            assert_eq!(Group::from_name(group.name()), Some(group));
        }
        assert_eq!(Group::from_name("admin"), None);
    }

    #[test]
    fn http_routes_fall_in_their_groups() {
        let cases = [
            ("/v2", Some(Group::Metadata)),
            ("/v2/health/live", Some(Group::Health)),
            ("/v2/models/{name}/ready", Some(Group::Health)),
            ("/v2/models/{name}/versions/{version}/ready", Some(Group::Health)),
            ("/v2/models/{name}", Some(Group::Metadata)),
            ("/v2/models/{name}/versions/{version}", Some(Group::Metadata)),
            ("/v2/models/{name}/infer", Some(Group::Inference)),
            ("/v2/models/{name}/versions/{version}/infer", Some(Group::Inference)),
            ("/v2/models/{name}/generate", Some(Group::Inference)),
            ("/v2/models/stats", Some(Group::Statistics)),
            ("/v2/models/{name}/versions/{version}/stats", Some(Group::Statistics)),
            ("/v2/models/{name}/config", Some(Group::ModelConfig)),
            ("/v2/repository/index", Some(Group::ModelRepository)),
            ("/v2/repository/models/{name}/unload", Some(Group::ModelRepository)),
            ("/v2/cudasharedmemory/region/{region}/register", Some(Group::SharedMemory)),
            ("/v2/trace/setting", Some(Group::Trace)),
            ("/v2/models/{name}/trace/setting", Some(Group::Trace)),
            ("/v2/logging", Some(Group::Logging)),
            ("/v3/models", None),
            ("/v2/models/{name}/explain", None),
        ];
        for (route, group) in cases {
            assert_eq!(Group::of_http_route(route), group, "{route}");
        }
    }

    #[test]
    fn grpc_methods_fall_in_their_groups() {
        let path = |m: &str| format!("/inference.GRPCInferenceService/{m}");
        assert_eq!(Group::of_grpc_path(&path("ModelStreamInfer")), Some(Group::Inference));
        assert_eq!(Group::of_grpc_path(&path("RepositoryModelLoad")), Some(Group::ModelRepository));
        assert_eq!(Group::of_grpc_path(&path("ModelReady")), Some(Group::Health));
        assert_eq!(Group::of_grpc_path(&path("LogSettings")), Some(Group::Logging));
        assert_eq!(Group::of_grpc_path(&path("Nothing")), None);
        assert_eq!(Group::of_grpc_path("/grpc.health.v1.Health/Check"), None);
    }

    #[test]
    fn restrictions_parse_and_refuse_bad_specs() {
        let r = Restriction::parse("model-repository,statistics:Admin-Key=s3cret").unwrap();
        assert_eq!(r.groups, [Group::ModelRepository, Group::Statistics]);
        assert_eq!(r.key, "admin-key");
        assert!(r.value.matches(b"s3cret"));
        assert!(!format!("{r:?}").contains("s3cret"), "Debug shows the value: {r:?}");
        let error = Restriction::parse("admin:key=s3cret").unwrap_err();
        assert!(error.contains("unknown endpoint group `admin`"), "{error}");
        let error = Restriction::parse("inference").unwrap_err();
        assert!(error.contains("GROUPS:KEY=VALUE"), "{error}");
        let error = Restriction::parse("inference:key s3cret").unwrap_err();
        assert!(error.contains("no `=`"), "{error}");
        let error = Restriction::parse("inference:k=").unwrap_err();
        assert!(error.contains("empty value"), "{error}");
        let error = Restriction::parse("inference:bad key=s3cret").unwrap_err();
        assert!(error.contains("header name") && !error.contains("s3cret"), "{error}");
        let twice = [Restriction::parse("inference:a=1").unwrap(), Restriction::parse("health,inference:b=2").unwrap()];
        assert!(Restrictions::new(twice).unwrap_err().contains("`inference` is restricted twice"));
    }

    #[test]
    fn a_restricted_group_needs_the_exact_value() {
        let restrictions = Restrictions::new([Restriction::parse("inference:k=v4lue").unwrap()]).unwrap();
        let offer = |value: Option<&'static [u8]>| move |key: &str| (key == "k").then_some(value).flatten();
        assert!(restrictions.check(Group::Inference, offer(Some(b"v4lue"))).is_ok());
        for wrong in [None, Some(&b"v4lu"[..]), Some(&b"v4lue!"[..]), Some(&b"V4LUE"[..]), Some(&b""[..])] {
            let refusal = restrictions.check(Group::Inference, offer(wrong)).unwrap_err();
            assert!(refusal.contains("inference endpoints are restricted") && refusal.contains("`k`"), "{refusal}");
            assert!(!refusal.contains("v4lue"), "the refusal shows the value: {refusal}");
        }
        assert!(restrictions.check(Group::Health, offer(None)).is_ok(), "an unrestricted group needs no key");
    }

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"ab\0", b"ab"));
    }
}
