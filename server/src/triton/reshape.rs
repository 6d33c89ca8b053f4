//! `reshape` of a Triton model's inputs and outputs: a client sends and gets
//! tensors of the config's `dims`; the model takes and gives `reshape.shape`.
//! The server reshapes each request's inputs before the model and each
//! answer's outputs after it (same elements, same order: no copy).

use baton::{DType, Dim, Tensor, TensorSpec};

/// One reshaped tensor: its name, the client's dims and the model's shape
/// (both without the batch dim; -1: variable).
#[derive(Clone, Debug, PartialEq)]
pub struct Reshape {
    pub name: String,
    pub input: bool,
    pub dims: Vec<i64>,
    pub shape: Vec<i64>,
    pub batched: bool,
}

impl Reshape {
    /// The tensor as the model takes it (an input) or as the client gets it (an output).
    pub fn apply(&self, tensor: &Tensor) -> Result<Tensor, String> {
        let target = if self.input { &self.shape } else { &self.dims };
        let shape = tensor.shape();
        let rows = if self.batched { shape.first().copied().unwrap_or(1) } else { 1 };
        let total: usize = shape.iter().product();
        let per_row = total.checked_div(rows).unwrap_or(0);
        let known: usize = target.iter().filter(|&&d| d >= 0).map(|&d| d as usize).product();
        let fill = match target.iter().filter(|&&d| d < 0).count() {
            0 if known == per_row => 1,
            1 if known > 0 && per_row % known == 0 => per_row / known,
            _ => {
                return Err(format!(
                    "`{}` has {per_row} elements per row, which do not fit reshape {target:?}",
                    self.name
                ))
            }
        };
        let dims = target.iter().map(|&d| if d < 0 { fill } else { d as usize });
        let new: Vec<usize> = if self.batched { std::iter::once(rows).chain(dims).collect() } else { dims.collect() };
        tensor.reshape(new).map_err(|e| format!("`{}`: {e}", self.name))
    }

    /// The tensor's spec as the client sees it (the config's dims, the batch dim first when batched).
    pub fn client_spec(&self, dtype: DType) -> TensorSpec {
        let dims = self.dims.iter().map(|&d| if d < 0 { Dim::Dynamic(None) } else { Dim::Fixed(d as usize) });
        let batch = self.batched.then_some(Dim::Dynamic(None));
        TensorSpec { name: self.name.clone(), dtype, shape: batch.into_iter().chain(dims).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_take_the_model_shape_and_outputs_the_client_dims() {
        let r = Reshape { name: "x".into(), input: true, dims: vec![4], shape: vec![2, -1], batched: true };
        let t = Tensor::from_vec(vec![3, 4], (0..12).map(|i| i as f32).collect()).unwrap();
        let m = r.apply(&t).unwrap();
        assert_eq!(m.shape(), &[3, 2, 2]);
        assert_eq!(m.as_slice::<f32>().unwrap(), t.as_slice::<f32>().unwrap());
        let back = Reshape { input: false, ..r.clone() }.apply(&m).unwrap();
        assert_eq!(back.shape(), &[3, 4]);
        let bad = Reshape { shape: vec![3], ..r };
        assert!(bad.apply(&t).unwrap_err().contains("4 elements per row"));
    }
}
