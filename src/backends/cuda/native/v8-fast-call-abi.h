// The part of V8's fast API call interface (v8-fast-api-calls.h) that
// cycle-calls.cc uses, declared here because Node 20's headers do not ship
// that file (Node 22 and later do: it is used instead where present).
//
// Note [Fast call ABI]
// Only the layout matters, and it was read off Node 20.20.2 (V8 11.3) itself:
// the CFunctionInfo objects node builds for its own fast calls, dumped with
// gdb, are a 3-byte CTypeInfo for the return (type, sequence type, flags), a
// pad byte, the argument count as a 32-bit integer at offset 4 and the
// argument array's address at offset 8; the type numbers seen there are
// bool 1, uint8 2, int32 3, uint32 4, double 8, a v8::Value 10, a one-byte
// string 11 (int64 5, uint64 6, float32 7 and pointer 9 lie between, in the
// order V8's header gives). The two constructors are V8's own, exported by
// the node binary (nm -D shows their mangled names, which these declarations
// reproduce). Later V8s put an Int64Representation in the pad byte (0 is
// "numbers", what this file leaves there) and take a fourth constructor
// argument, which is why newer Nodes use their own header.
#pragma once
#include <cstdint>
#include <v8.h>

namespace v8 {

class CTypeInfo {
 public:
  enum class Type : uint8_t {
    kVoid = 0,
    kBool = 1,
    kUint8 = 2,
    kInt32 = 3,
    kUint32 = 4,
    kInt64 = 5,
    kUint64 = 6,
    kFloat32 = 7,
    kFloat64 = 8,
    kPointer = 9,
    kV8Value = 10,
  };
  explicit constexpr CTypeInfo(Type type) : type_(type), sequence_type_(0), flags_(0) {}

 private:
  Type type_;
  uint8_t sequence_type_;  // 0: a scalar
  uint8_t flags_;          // 0: none
};

class V8_EXPORT CFunctionInfo {
 public:
  CFunctionInfo(const CTypeInfo& return_info, unsigned int arg_count, const CTypeInfo* arg_info);

 private:
  const CTypeInfo return_info_;
  const unsigned int arg_count_;
  const CTypeInfo* arg_info_;
};

class V8_EXPORT CFunction {
 public:
  CFunction(const void* address, const CFunctionInfo* type_info);

 private:
  const void* address_;
  const CFunctionInfo* type_info_;
};

static_assert(sizeof(CTypeInfo) == 3, "CTypeInfo is 3 bytes");
static_assert(sizeof(CFunctionInfo) == 16, "CFunctionInfo is 16 bytes on LP64");
static_assert(sizeof(CFunction) == 16, "CFunction is 16 bytes on LP64");

}  // namespace v8
