// The part of V8's fast API call interface (v8-fast-api-calls.h) that
// cycle-calls.cc uses, declared here because Node's headers do not ship that
// file (neither 20's nor 22's nor 24's; where a Node does, it is used instead).
//
// Note [Fast call ABI]
// Only the layout matters, and it was read off each Node's own binary, for
// the V8s listed in cycle-calls.cc's include guard and no others:
//  - Node 20.20.2 (V8 11.3): the CFunctionInfo objects node builds for its
//    own fast calls, dumped with gdb, are a 3-byte CTypeInfo for the return
//    (type, sequence type, flags), a pad byte, the argument count as a 32-bit
//    integer at offset 4 and the argument array's address at offset 8; the
//    type numbers seen there are bool 1, uint8 2, int32 3, uint32 4, double
//    8, a v8::Value 10, a one-byte string 11 (int64 5, uint64 6, float32 7
//    and pointer 9 lie between, in the order V8's header gives).
//  - Node 22.23.5 (V8 12.4) and 24.22.3 (V8 13.6): the same, but for the pad
//    byte, which holds an Int64Representation (0, "numbers", in every object
//    node builds) that the constructor takes as a fourth argument. Read the
//    same way (gdb, `x/40xb` of node's own CFunctionInfo instances after
//    start-up: performance.now's is return 8, representation 0, one
//    argument of type 10; one of 22's fs functions shows int32 3, a uint8
//    typed array as type 2 with sequence type 2, uint32 4, int64 5 and bool
//    1), and by disassembling the exported constructor (it stores the
//    fourth argument's byte at offset 3, the count at 4, the array at 8)
//    and CFunctionInfo::ArgumentInfo (argument i at array + 3i: a CTypeInfo
//    is still 3 bytes).
// The two constructors are V8's own, exported by the node binary (nm -D
// shows their mangled names, which these declarations reproduce).
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
#if V8_MAJOR_VERSION >= 12
  enum class Int64Representation : uint8_t { kNumber = 0, kBigInt = 1 };
  CFunctionInfo(const CTypeInfo& return_info, unsigned int arg_count, const CTypeInfo* arg_info,
                Int64Representation repr = Int64Representation::kNumber);
#else
  CFunctionInfo(const CTypeInfo& return_info, unsigned int arg_count, const CTypeInfo* arg_info);
#endif

 private:
  const CTypeInfo return_info_;
#if V8_MAJOR_VERSION >= 12
  const Int64Representation repr_;
#endif
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
