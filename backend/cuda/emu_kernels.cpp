//go:build cudaemu && !cuda

// The kernels of kernels/sipack.cu compiled for the CPU, and the block
// scheduler that runs them (see emu.h). Launch by name with the packed
// parameter values; each kernel's parameter types unpack them.
#include "emu.h"
#include "kernels/sipack.cu"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ucontext.h>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <functional>
#include <vector>

emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

const int kStack = 256 * 1024;

// Fibers switch at every barrier, once per thread, so the switch is most
// of the emulator's time. On x86-64 it is emu_switch: the callee-saved
// registers pushed and the stack pointer swapped (no kernel changes the
// floating-point control registers; libc's longjmp would also restore the
// signal mask and unwind cleanup handlers); elsewhere swapcontext. A fiber's stack is made once
// and its entry runs one block's thread after another.
#if defined(__x86_64__)
extern "C" void emu_switch(void** save, void* to);
asm(R"(
	.text
	.globl emu_switch
	.type emu_switch,@function
emu_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size emu_switch, .-emu_switch
)");

struct Context {
	void* sp = nullptr;
};

void switchTo(Context& save, Context& to) { emu_switch(&save.sp, to.sp); }

// makeContext lays out stack so that the first switch to c "returns" into
// fn as if called: the saved registers zero, fn's address, then a slot for
// fn's own return address, aligned so that fn starts with rsp ≡ 8 (mod 16).
void makeContext(Context& c, std::vector<char>& stack, void (*fn)()) {
	uint64_t* sp = (uint64_t*)(((uintptr_t)stack.data() + stack.size()) & ~(uintptr_t)15);
	*--sp = 0;
	*--sp = (uint64_t)(uintptr_t)fn;
	for (int i = 0; i < 6; i++) *--sp = 0;
	c.sp = sp;
}
#else
struct Context {
	ucontext_t uc;
};

void switchTo(Context& save, Context& to) { swapcontext(&save.uc, &to.uc); }

void makeContext(Context& c, std::vector<char>& stack, void (*fn)()) {
	getcontext(&c.uc);
	c.uc.uc_stack.ss_sp = stack.data();
	c.uc.uc_stack.ss_size = stack.size();
	c.uc.uc_link = nullptr; // fn never returns
	makecontext(&c.uc, fn, 0);
}
#endif

struct Fiber {
	Context ctx;
	std::vector<char> stack;
	bool done = false;
};

Context sched;
// Fibers are allocated one by one and never move: a ucontext_t points
// into itself.
std::vector<Fiber*> fibers;
int cur = 0;                   // the running fiber: thread cur of the block
int live = 0;                  // threads of the block not yet returned
int barArrived = 0, barGen = 0; // __syncthreads
std::vector<int> warpArrived, warpGen, warpLive;
std::vector<double> warpSlot;   // (warps, 32)
std::function<void()> body;     // the kernel call of the current launch

void yield() { switchTo(fibers[cur]->ctx, sched); }

// entry is a fiber's life: one block's thread after another, parking
// between them.
void entry() {
	for (;;) {
		body();
		fibers[cur]->done = true;
		live--;
		warpLive[cur / 32]--;
		// A returned thread no longer holds a barrier back.
		if (live > 0 && barArrived == live) { barArrived = 0; barGen++; }
		int w = cur / 32;
		if (warpLive[w] > 0 && warpArrived[w] == warpLive[w]) { warpArrived[w] = 0; warpGen[w]++; }
		yield();
	}
}

void warpBarrier() {
	int w = cur / 32;
	int g = warpGen[w];
	if (++warpArrived[w] == warpLive[w]) { warpArrived[w] = 0; warpGen[w]++; return; }
	while (warpGen[w] == g) yield();
}

template <typename T>
T shfl(T v, int o) {
	unsigned tid = cur;
	double* slot = &warpSlot[(tid / 32) * 32];
	slot[tid % 32] = (double)v;
	warpBarrier();
	T r = (T)slot[(tid % 32) ^ o];
	warpBarrier();
	return r;
}

// runBlock runs every thread of one block to completion.
void runBlock(unsigned threads) {
	int warps = (threads + 31) / 32;
	warpArrived.assign(warps, 0);
	warpGen.assign(warps, 0);
	warpLive.assign(warps, 0);
	warpSlot.assign(warps * 32, 0);
	while (fibers.size() < threads) {
		Fiber* f = new Fiber;
		f->stack.resize(kStack);
		makeContext(f->ctx, f->stack, entry);
		fibers.push_back(f);
	}
	for (unsigned t = 0; t < threads; t++) {
		fibers[t]->done = false;
		warpLive[t / 32]++;
	}
	live = threads;
	barArrived = 0;
	while (live > 0) {
		for (unsigned t = 0; t < threads; t++) {
			if (fibers[t]->done) continue;
			cur = t;
			threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
			switchTo(sched, fibers[t]->ctx);
		}
	}
}

template <typename T>
T unslot(uint64_t v) {
	if constexpr (std::is_pointer<T>::value) {
		return (T)(uintptr_t)v;
	} else if constexpr (std::is_same<T, float>::value) {
		uint32_t b = (uint32_t)v;
		float f;
		std::memcpy(&f, &b, 4);
		return f;
	} else {
		return (T)(int32_t)(uint32_t)v;
	}
}

template <typename... A, size_t... I>
void call(void (*f)(A...), const uint64_t* v, std::index_sequence<I...>) {
	f(unslot<A>(v[I])...);
}

struct Kernel {
	int nargs;
	std::function<void(const uint64_t*)> run;
};

template <typename... A>
Kernel kernel(void (*f)(A...)) {
	return {(int)sizeof...(A), [f](const uint64_t* v) { call(f, v, std::index_sequence_for<A...>{}); }};
}

const std::unordered_map<std::string, Kernel>& table() {
	static const std::unordered_map<std::string, Kernel> t = {
		{"sip_embed", kernel(sip_embed)},
		{"sip_rmsnorm", kernel(sip_rmsnorm)},
		{"sip_add_bias", kernel(sip_add_bias)},
		{"sip_add", kernel(sip_add)},
		{"sip_rope", kernel(sip_rope)},
		{"sip_matvec", kernel(sip_matvec)},
		{"sip_matmul", kernel(sip_matmul)},
		{"sip_ffn_gateup", kernel(sip_ffn_gateup)},
		{"sip_ffn_gateup_tiled", kernel(sip_ffn_gateup_tiled)},
		{"sip_ffn_down_partial", kernel(sip_ffn_down_partial)},
		{"sip_reduce_splits", kernel(sip_reduce_splits)},
		{"sip_ffn_down_tiled", kernel(sip_ffn_down_tiled)},
		{"sip_attention", kernel(sip_attention)},
		{"sip_vote", kernel(sip_vote)},
		{"sip_kv_append", kernel(sip_kv_append)},
		{"sip_argmax", kernel(sip_argmax)},
		{"sip_matvec_fused", kernel(sip_matvec_fused)},
		{"sip_ffn_gateup_norm", kernel(sip_ffn_gateup_norm)},
		{"sip_attention_rope", kernel(sip_attention_rope)},
		{"sip_route", kernel(sip_route)},
		{"sip_topk", kernel(sip_topk)},
	};
	return t;
}

}  // namespace

unsigned emu_thread() { return cur; }
float emu_shfl_xor(float v, int o) { return shfl(v, o); }

unsigned emu_ballot(bool pred) {
	unsigned tid = cur;
	double* slot = &warpSlot[(tid / 32) * 32];
	slot[tid % 32] = pred ? 1 : 0;
	warpBarrier();
	unsigned b = 0;
	for (int i = 0; i < 32; i++)
		if (slot[i] != 0) b |= 1u << i;
	warpBarrier();
	return b;
}
double emu_shfl_xor(double v, int o) { return shfl(v, o); }

void __syncthreads() {
	int g = barGen;
	if (++barArrived == live) { barArrived = 0; barGen++; return; }
	while (barGen == g) yield();
}

extern "C" int emu_launch(const char* name, int gx, int gy, int gz, int bx, int by, int bz, const uint64_t* vals, int n) {
	auto it = table().find(name);
	if (it == table().end()) return 1;
	if (it->second.nargs != n) return 2;
	if (bx * by * bz > 1024 || bx * by * bz < 1) return 3;
	std::vector<uint64_t> v(vals, vals + n);
	gridDim = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
	blockDim = {(unsigned)bx, (unsigned)by, (unsigned)bz};
	const Kernel& k = it->second;
	body = [&k, &v]() { k.run(v.data()); };
	for (int z = 0; z < gz; z++)
		for (int y = 0; y < gy; y++)
			for (int x = 0; x < gx; x++) {
				blockIdx = {(unsigned)x, (unsigned)y, (unsigned)z};
				runBlock(bx * by * bz);
			}
	return 0;
}
