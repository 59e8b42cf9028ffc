// The seven driver calls of the VMM cycle as V8 fast API calls (Note [Fast
// cycle calls] in ../cycle-calls.ts says why and how they are used).
//
// bind(addresses, owner) takes the addresses of cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease and
// cuMemAddressFree (koffi resolved them from libcuda; nothing here opens a
// library) and returns an object whose methods call them, each answering the
// CUresult. The object keeps `owner` alive as long as itself (Note [Library
// lifetime]): koffi unloads a library once nothing of koffi's is left of it,
// and these addresses are not koffi's.
//
// Every 64-bit argument is a Number (or, on the slow path, a BigInt). An
// out-parameter lands in the object's `scratch` bytes 0-7, and the struct
// arguments are read from them: the CUmemAllocationProp at 8, one
// CUmemAccessDesc at 40; bytes 56-63 count the calls that took the fast path.
// Optimised JavaScript calls the fast functions directly; everything else
// goes through the slow callbacks, which do the same work through the
// ordinary V8 API.
#include <node.h>
#include <v8.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if __has_include(<v8-fast-api-calls.h>)
#include <v8-fast-api-calls.h>
#elif (V8_MAJOR_VERSION == 11 && V8_MINOR_VERSION == 3) || (V8_MAJOR_VERSION == 12 && V8_MINOR_VERSION == 4) || \
    (V8_MAJOR_VERSION == 13 && V8_MINOR_VERSION == 6)
// Nodes 20, 22 and 24, whose layout Note [Fast call ABI] read off their binaries.
#include "v8-fast-call-abi.h"
#else
#error "no fast API call declarations for this V8: the CUDA backend uses koffi alone"
#endif

namespace {

using v8::BigInt;
using v8::CFunction;
using v8::CFunctionInfo;
using v8::CTypeInfo;
using v8::FunctionCallbackInfo;
using v8::Isolate;
using v8::Local;
using v8::Object;
using v8::Value;

using CUdeviceptr = unsigned long long;
using Handle = unsigned long long;
using Reserve = int (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
using Create = int (*)(Handle*, size_t, const void*, unsigned long long);
using Map = int (*)(CUdeviceptr, size_t, size_t, Handle, unsigned long long);
using SetAccess = int (*)(CUdeviceptr, size_t, const void*, size_t);
using Unmap = int (*)(CUdeviceptr, size_t);
using Release = int (*)(Handle);
using AddressFree = int (*)(CUdeviceptr, size_t);

constexpr size_t kScratchBytes = 64;
constexpr size_t kPropOffset = 8;
constexpr size_t kDescOffset = 40;
constexpr size_t kFastCountOffset = 56;  // a uint64: how many calls took the fast path

// One bound set of driver functions and the address of its scratch bytes,
// which are the `scratch` ArrayBuffer's own (V8's off-heap memory, which does
// not move). The bound object keeps that buffer in a property it cannot lose,
// and frees the Binding when it is collected.
struct Binding {
  uint8_t* scratch;
  Reserve reserve;
  Create create;
  Map map;
  SetAccess set_access;
  Unmap unmap;
  Release release;
  AddressFree address_free;
  v8::Global<Object> self;
};

void Collected(const v8::WeakCallbackInfo<Binding>& info) {
  Binding* b = info.GetParameter();
  b->self.Reset();
  delete b;
}

Binding* Of(Local<Object> receiver) {
  return static_cast<Binding*>(receiver->GetAlignedPointerFromInternalField(0));
}

// The Binding of a fast call, its count of fast calls raised.
Binding* Fast(Local<Object> receiver) {
  Binding* b = Of(receiver);
  ++*reinterpret_cast<uint64_t*>(b->scratch + kFastCountOffset);
  return b;
}

// A Number as the C integer koffi makes of it (measured through koffi 3.3.4,
// test/backends/cycle-calls.test.ts): truncated toward zero into int64, so
// -1 is all ones; saturated at int64's ends past them; NaN and the
// infinities 0.
uint64_t U64(double d) {
  if (std::isnan(d) || std::isinf(d)) return 0;
  if (d >= 9223372036854775808.0) return static_cast<uint64_t>(INT64_MAX);
  if (d < -9223372036854775808.0) return static_cast<uint64_t>(INT64_MIN);
  return static_cast<uint64_t>(static_cast<int64_t>(d));
}

// ---- fast functions: called from optimised code, no allocation, no throw.

int32_t FastReserve(Local<Object> self, double size, double alignment, double addr, double flags) {
  Binding* b = Fast(self);
  return b->reserve(reinterpret_cast<CUdeviceptr*>(b->scratch), U64(size), U64(alignment), U64(addr), U64(flags));
}
int32_t FastCreate(Local<Object> self, double size, double flags) {
  Binding* b = Fast(self);
  return b->create(reinterpret_cast<Handle*>(b->scratch), U64(size), b->scratch + kPropOffset, U64(flags));
}
int32_t FastMap(Local<Object> self, double ptr, double size, double offset, double handle, double flags) {
  return Fast(self)->map(U64(ptr), U64(size), U64(offset), U64(handle), U64(flags));
}
int32_t FastSetAccess(Local<Object> self, double ptr, double size) {
  Binding* b = Fast(self);
  return b->set_access(U64(ptr), U64(size), b->scratch + kDescOffset, 1);
}
int32_t FastUnmap(Local<Object> self, double ptr, double size) { return Fast(self)->unmap(U64(ptr), U64(size)); }
int32_t FastRelease(Local<Object> self, double handle) { return Fast(self)->release(U64(handle)); }
int32_t FastAddressFree(Local<Object> self, double ptr, double size) {
  return Fast(self)->address_free(U64(ptr), U64(size));
}

// ---- slow callbacks: the same calls through the ordinary API.

// Reads argument i as a 64-bit integer (a Number or a BigInt); false after
// throwing a TypeError, as koffi does for anything else.
bool Arg(const FunctionCallbackInfo<Value>& info, int i, uint64_t* out) {
  Local<Value> v = info[i];
  if (v->IsNumber()) {
    *out = U64(v.As<v8::Number>()->Value());
    return true;
  }
  if (v->IsBigInt()) {
    *out = v.As<BigInt>()->Uint64Value();
    return true;
  }
  Isolate* isolate = info.GetIsolate();
  isolate->ThrowException(v8::Exception::TypeError(
      v8::String::NewFromUtf8Literal(isolate, "a driver argument must be a number or a bigint")));
  return false;
}

template <int N>
bool Args(const FunctionCallbackInfo<Value>& info, uint64_t (&a)[N]) {
  if (info.Length() != N) {
    Isolate* isolate = info.GetIsolate();
    isolate->ThrowException(v8::Exception::TypeError(
        v8::String::NewFromUtf8Literal(isolate, "wrong number of driver arguments")));
    return false;
  }
  for (int i = 0; i < N; i++)
    if (!Arg(info, i, &a[i])) return false;
  return true;
}

void SlowReserve(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[4];
  if (!Args(info, a)) return;
  Binding* b = Of(info.This());
  info.GetReturnValue().Set(b->reserve(reinterpret_cast<CUdeviceptr*>(b->scratch), a[0], a[1], a[2], a[3]));
}
void SlowCreate(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[2];
  if (!Args(info, a)) return;
  Binding* b = Of(info.This());
  info.GetReturnValue().Set(b->create(reinterpret_cast<Handle*>(b->scratch), a[0], b->scratch + kPropOffset, a[1]));
}
void SlowMap(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[5];
  if (!Args(info, a)) return;
  info.GetReturnValue().Set(Of(info.This())->map(a[0], a[1], a[2], a[3], a[4]));
}
void SlowSetAccess(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[2];
  if (!Args(info, a)) return;
  Binding* b = Of(info.This());
  info.GetReturnValue().Set(b->set_access(a[0], a[1], b->scratch + kDescOffset, 1));
}
void SlowUnmap(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[2];
  if (!Args(info, a)) return;
  info.GetReturnValue().Set(Of(info.This())->unmap(a[0], a[1]));
}
void SlowRelease(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[1];
  if (!Args(info, a)) return;
  info.GetReturnValue().Set(Of(info.This())->release(a[0]));
}
void SlowAddressFree(const FunctionCallbackInfo<Value>& info) {
  uint64_t a[2];
  if (!Args(info, a)) return;
  info.GetReturnValue().Set(Of(info.This())->address_free(a[0], a[1]));
}

// ---- type descriptions of the fast functions (receiver first).

constexpr CTypeInfo kInt32{CTypeInfo::Type::kInt32};
constexpr CTypeInfo kReceiver{CTypeInfo::Type::kV8Value};
constexpr CTypeInfo kF64{CTypeInfo::Type::kFloat64};

const CTypeInfo kArgs1[] = {kReceiver, kF64};
const CTypeInfo kArgs2[] = {kReceiver, kF64, kF64};
const CTypeInfo kArgs4[] = {kReceiver, kF64, kF64, kF64, kF64};
const CTypeInfo kArgs5[] = {kReceiver, kF64, kF64, kF64, kF64, kF64};

struct Method {
  const char* name;
  v8::FunctionCallback slow;
  const void* fast;
  unsigned doubles;
};

const Method kMethods[] = {
    {"cuMemAddressReserve", SlowReserve, reinterpret_cast<const void*>(FastReserve), 4},
    {"cuMemCreate", SlowCreate, reinterpret_cast<const void*>(FastCreate), 2},
    {"cuMemMap", SlowMap, reinterpret_cast<const void*>(FastMap), 5},
    {"cuMemSetAccess", SlowSetAccess, reinterpret_cast<const void*>(FastSetAccess), 2},
    {"cuMemUnmap", SlowUnmap, reinterpret_cast<const void*>(FastUnmap), 2},
    {"cuMemRelease", SlowRelease, reinterpret_cast<const void*>(FastRelease), 1},
    {"cuMemAddressFree", SlowAddressFree, reinterpret_cast<const void*>(FastAddressFree), 2},
};
constexpr int kMethodCount = sizeof(kMethods) / sizeof(kMethods[0]);

const CTypeInfo* ArgsOf(unsigned doubles) {
  switch (doubles) {
    case 1: return kArgs1;
    case 2: return kArgs2;
    case 4: return kArgs4;
    default: return kArgs5;
  }
}

// Per-isolate: the template of bound objects (one internal field) with the
// methods on its prototype, each checked to be called on such an object.
struct Templates {
  v8::Global<v8::FunctionTemplate> bound;
};

void Bind(const FunctionCallbackInfo<Value>& info) {
  Isolate* isolate = info.GetIsolate();
  Local<v8::Context> context = isolate->GetCurrentContext();
  auto* templates = static_cast<Templates*>(info.Data().As<v8::External>()->Value());
  if (info.Length() != 2 || !info[0]->IsArray() || info[0].As<v8::Array>()->Length() != kMethodCount ||
      !info[1]->IsObject()) {
    isolate->ThrowException(v8::Exception::TypeError(v8::String::NewFromUtf8Literal(
        isolate, "bind takes the seven functions' addresses, in order, and the object that keeps their library")));
    return;
  }
  Local<v8::Array> list = info[0].As<v8::Array>();
  void* fns[kMethodCount];
  for (int i = 0; i < kMethodCount; i++) {
    Local<Value> v;
    if (!list->Get(context, i).ToLocal(&v)) return;
    bool lossless = false;
    uint64_t address = v->IsBigInt() ? v.As<BigInt>()->Uint64Value(&lossless) : 0;
    if (!lossless || address == 0) {
      isolate->ThrowException(v8::Exception::TypeError(
          v8::String::NewFromUtf8Literal(isolate, "a function address must be a nonzero bigint")));
      return;
    }
    fns[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }
  Local<v8::ArrayBuffer> scratch = v8::ArrayBuffer::New(isolate, kScratchBytes);
  // Undetachable by script (a key no script holds): a transfer would move the
  // bytes the fast functions write to out from under the Binding.
  scratch->SetDetachKey(v8::Object::New(isolate));
  Local<Object> self;
  if (!templates->bound.Get(isolate)->InstanceTemplate()->NewInstance(context).ToLocal(&self)) return;
  if (self->DefineOwnProperty(context, v8::String::NewFromUtf8Literal(isolate, "scratch"), scratch,
                              static_cast<v8::PropertyAttribute>(v8::ReadOnly | v8::DontDelete))
          .IsNothing())
    return;
  auto* b = new Binding{static_cast<uint8_t*>(scratch->Data()),
                        reinterpret_cast<Reserve>(fns[0]),
                        reinterpret_cast<Create>(fns[1]),
                        reinterpret_cast<Map>(fns[2]),
                        reinterpret_cast<SetAccess>(fns[3]),
                        reinterpret_cast<Unmap>(fns[4]),
                        reinterpret_cast<Release>(fns[5]),
                        reinterpret_cast<AddressFree>(fns[6]),
                        v8::Global<Object>(isolate, self)};
  b->self.SetWeak(b, Collected, v8::WeakCallbackType::kParameter);
  self->SetAlignedPointerInInternalField(0, b);
  self->SetInternalField(1, info[1]);
  info.GetReturnValue().Set(self);
}

// The fast functions' descriptions, made once per process (V8 keeps the
// pointers) on first use; C++ makes the first use thread-safe for workers.
const CFunction* CFunctions() {
  static const CFunction* all = [] {
    auto* made = static_cast<CFunction*>(std::malloc(sizeof(CFunction) * kMethodCount));
    for (int i = 0; i < kMethodCount; i++) {
      const Method& m = kMethods[i];
      new (&made[i]) CFunction(m.fast, new CFunctionInfo(kInt32, m.doubles + 1, ArgsOf(m.doubles)));
    }
    return made;
  }();
  return all;
}

void DeleteTemplates(void* templates) { delete static_cast<Templates*>(templates); }

}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  Isolate* isolate = context->GetIsolate();
  auto* templates = new Templates();
  node::AddEnvironmentCleanupHook(isolate, DeleteTemplates, templates);
  Local<v8::FunctionTemplate> bound = v8::FunctionTemplate::New(isolate);
  bound->InstanceTemplate()->SetInternalFieldCount(2);  // the Binding; the library's owner
  Local<v8::Signature> signature = v8::Signature::New(isolate, bound);
  const CFunction* cfunctions = CFunctions();
  for (int i = 0; i < kMethodCount; i++) {
    const Method& m = kMethods[i];
    Local<v8::FunctionTemplate> method = v8::FunctionTemplate::New(
        isolate, m.slow, Local<Value>(), signature, static_cast<int>(m.doubles), v8::ConstructorBehavior::kThrow,
        v8::SideEffectType::kHasSideEffect, &cfunctions[i]);
    bound->PrototypeTemplate()->Set(v8::String::NewFromUtf8(isolate, m.name).ToLocalChecked(), method);
  }
  templates->bound.Reset(isolate, bound);
  Local<v8::FunctionTemplate> bind = v8::FunctionTemplate::New(isolate, Bind, v8::External::New(isolate, templates));
  exports->Set(context, v8::String::NewFromUtf8Literal(isolate, "bind"), bind->GetFunction(context).ToLocalChecked())
      .Check();
}
