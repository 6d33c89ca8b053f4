//! The answer to a request: one tensor per pipeline output.

use std::sync::Arc;

use super::RequestError;
use crate::tensor::Tensor;

/// The answer to a request: one tensor per pipeline output.
#[derive(Clone, Debug)]
pub struct Outputs {
    names: Arc<[String]>,
    tensors: Vec<Tensor>,
}

impl Outputs {
    pub(crate) fn new(names: Arc<[String]>, tensors: Vec<Tensor>) -> Self {
        debug_assert_eq!(names.len(), tensors.len());
        Outputs { names, tensors }
    }

    /// The output named `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.names.iter().position(|n| n == name).map(|i| &self.tensors[i])
    }

    /// `(name, tensor)` pairs in the pipeline's output order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.names.iter().map(String::as_str).zip(&self.tensors)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Takes the tensors out, in the pipeline's output order.
    pub fn into_tensors(self) -> Vec<Tensor> {
        self.tensors
    }
}

pub type RequestResult = Result<Outputs, RequestError>;
