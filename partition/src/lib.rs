//! Graph partitioning: splitting a pipeline or a model's operator graph into
//! k balanced parts while keeping critical relations inside parts.
