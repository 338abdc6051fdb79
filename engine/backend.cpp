#include "engine/backend.h"

#include "engine/error.h"

namespace hg {

const CudaBackend& require_cuda(const char* op) {
  const CudaBackend* b = cuda_backend();
  if (!b) fail(op, "a CUDA tensor was asked for, but handgrad was built without CUDA (configure with the CUDA "
               "toolkit installed, nvcc on PATH); use Device::cpu");
  if (!b->device_available())
    fail(op, "a CUDA tensor was asked for, but no usable GPU is present: {}; use Device::cpu", b->device_summary());
  return *b;
}

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "neg";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::relu: return "relu";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::gelu: return "gelu";
    case UnaryOp::pow: return "pow";
    case UnaryOp::add_scalar: return "add_scalar";
    case UnaryOp::mul_scalar: return "mul_scalar";
    case UnaryOp::rsub_scalar: return "rsub_scalar";
    case UnaryOp::rdiv_scalar: return "rdiv_scalar";
  }
  return "unary(?)";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    case BinaryOp::div: return "div";
    case BinaryOp::relu_backward: return "relu_backward";
    case BinaryOp::tanh_backward: return "tanh_backward";
    case BinaryOp::gelu_backward: return "gelu_backward";
  }
  return "binary(?)";
}

}  // namespace hg
