//! `[fairness]` validated: the tenants (names and weights by index), the order, the decomposition granule.

use super::NodeSpec;
use crate::config::{ConfigError, FairnessConfig, FairnessKind};

/// Name of the tenant a request without one belongs to.
pub const DEFAULT_TENANT: &str = "default";

/// The validated tenants of a pipeline: names and weights by index.
/// Index 0 is always [`DEFAULT_TENANT`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenants {
    pub names: Vec<String>,
    pub weights: Vec<u32>,
}

impl Default for Tenants {
    fn default() -> Self {
        Tenants { names: vec![DEFAULT_TENANT.into()], weights: vec![1] }
    }
}

impl Tenants {
    /// From `[fairness] tenants` (name → weight). The default tenant comes first,
    /// with weight 1 unless the table names it.
    pub fn from_config(config: &FairnessConfig) -> Result<Tenants, ConfigError> {
        let mut tenants = Tenants::default();
        for (name, &weight) in &config.tenants {
            if !(1..=MAX_WEIGHT).contains(&weight) {
                return Err(ConfigError::new(
                    format!("fairness.tenants.{name}"),
                    format!("weight {weight} is out of range: give a whole number from 1 to {MAX_WEIGHT}"),
                ));
            }
            if name == DEFAULT_TENANT {
                tenants.weights[0] = weight;
            } else {
                tenants.names.push(name.clone());
                tenants.weights.push(weight);
            }
        }
        Ok(tenants)
    }

    /// The index of tenant `name` (`None`: the default tenant), or an error naming it.
    pub fn index(&self, name: Option<&str>) -> Result<usize, String> {
        let Some(name) = name else { return Ok(0) };
        self.names.iter().position(|n| n == name).ok_or_else(|| {
            format!("unknown tenant `{name}` (the pipeline's [fairness] tenants are: {})", self.names.join(", "))
        })
    }
}

/// Largest configured tenant weight.
pub const MAX_WEIGHT: u32 = 1 << 16;

/// `[fairness]` validated: the order, the tenants and the decomposition granule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FairnessSpec {
    pub order: FairnessKind,
    pub tenants: Tenants,
    /// Rows per job are a multiple of this; `None`: large requests are refused.
    pub granule: Option<usize>,
}

impl FairnessSpec {
    /// Checks `[fairness]` against the pipeline's nodes.
    pub fn build(config: &FairnessConfig, nodes: &[NodeSpec]) -> Result<Self, ConfigError> {
        let tenants = Tenants::from_config(config)?;
        if let Some(granule) = config.granule {
            let smallest = nodes.iter().min_by_key(|n| n.max_batch);
            if granule == 0 {
                return Err(ConfigError::new("fairness.granule", "must be at least 1 row"));
            }
            if let Some(node) = smallest.filter(|n| n.max_batch < granule) {
                return Err(ConfigError::new(
                    "fairness.granule",
                    format!(
                        "{granule} rows is more than node `{}` runs per batch (max_batch = {}): a job must fit \
                         every node; use a granule of at most {}",
                        node.name, node.max_batch, node.max_batch
                    ),
                ));
            }
        }
        Ok(FairnessSpec { order: config.order, tenants, granule: config.granule })
    }
}
