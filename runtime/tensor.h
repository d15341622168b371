// tensor.h — a typed, reference-counted buffer owned by one device's Ops.
//
// Guarantees: a Tensor's memory is released through the Ops that allocated it, exactly when the last
// Tensor referring to it goes away, so the Ops' live/peak byte counters are the real allocation
// footprint of a device. Tensors never share storage across devices (transports copy).
// Shape is the caller's business: a Tensor is `count` elements of one dtype, row-major by convention.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ps::rt {

enum class DType : unsigned char { kF32, kI32 };
inline size_t dtype_bytes(DType) { return 4; }

// Memory behind a Tensor. Backends derive from it; the destructor returns the memory.
class Storage {
 public:
  Storage(void* ptr, size_t bytes) : ptr_(ptr), bytes_(bytes) {}
  virtual ~Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_;
  size_t bytes_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, size_t count, DType dtype)
      : storage_(std::move(storage)), count_(count), dtype_(dtype) {}

  bool empty() const { return storage_ == nullptr; }
  size_t count() const { return count_; }             // elements: 512
  size_t bytes() const { return count_ * dtype_bytes(dtype_); }
  DType dtype() const { return dtype_; }
  float* f32() const { return static_cast<float*>(storage_->ptr()); }
  int32_t* i32() const { return static_cast<int32_t*>(storage_->ptr()); }
  // Identity of the underlying storage (for counting shared buffers once).
  const Storage* storage_id() const { return storage_.get(); }
  Storage* storage() const { return storage_.get(); }
  void reset() { storage_.reset(); count_ = 0; }

 private:
  std::shared_ptr<Storage> storage_;
  size_t count_ = 0;
  DType dtype_ = DType::kF32;
};

}  // namespace ps::rt
