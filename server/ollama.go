package server

// ollama.go serves ollama's API (POST /api/chat and /api/generate, GET
// /api/tags, /api/ps and /api/version, POST /api/show) over the same engine,
// slots and chat template as the OpenAI endpoints: many front ends speak
// only ollama. Its errors are ollama's {"error": "message"} with the HTTP
// status; a bad field is named as the request gave it (options.top_k).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sipack/sipack/chat"
)

// ollamaVersion is the ollama API version /api/version reports: clients
// compare it to decide which endpoints and fields they may use.
const ollamaVersion = "0.9.0"

// ollamaOptions are ollama's generation options that this server honours;
// others (num_gpu, mirostat, ...) are ignored, as ollama ignores those its
// runner does not use.
type ollamaOptions struct {
	Temperature      *float64        `json:"temperature"`
	TopK             *int            `json:"top_k"`
	TopP             *float64        `json:"top_p"`
	MinP             *float64        `json:"min_p"`
	NumPredict       *int            `json:"num_predict"`
	NumCtx           *int            `json:"num_ctx"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	RepeatLastN      *int            `json:"repeat_last_n"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
}

// ollamaCommon are the fields of /api/chat and /api/generate alike.
type ollamaCommon struct {
	Model   *string         `json:"model"`
	Options *ollamaOptions  `json:"options"`
	Stream  *bool           `json:"stream"`
	Format  json.RawMessage `json:"format"`
}

type ollamaChatRequest struct {
	ollamaCommon
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"` // tools.go
}

type ollamaGenerateRequest struct {
	ollamaCommon
	Prompt   *string         `json:"prompt"`
	System   *string         `json:"system"`
	Raw      *bool           `json:"raw"`
	Template *string         `json:"template"`
	Suffix   *string         `json:"suffix"`
	Context  json.RawMessage `json:"context"`
	Images   json.RawMessage `json:"images"`
}

type ollamaShowRequest struct {
	Model *string `json:"model"`
	Name  *string `json:"name"` // the field's name before ollama 0.4
}

// ollamaError answers ollama's error shape.
func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// ollamaTag is the served model's ollama name: ollama names carry a tag,
// and clients send back the name /api/tags gave them.
func (s *Server) ollamaTag() string {
	if strings.Contains(s.opt.Model, ":") {
		return s.opt.Model
	}
	return s.opt.Model + ":latest"
}

// ollamaModel checks a request's model and returns the name to answer with
// (the one the request gave); it answers 404 itself and returns false. An
// absent model is the served one, as on the OpenAI endpoints.
func (s *Server) ollamaModel(w http.ResponseWriter, model *string) (string, bool) {
	if model == nil || *model == "" {
		return s.ollamaTag(), true
	}
	name := *model
	if s.serves(name) || s.serves(strings.TrimSuffix(name, ":latest")) || name == s.ollamaTag() {
		return name, true
	}
	ollamaError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found; this server serves '%s'", clip(name, 200), s.ollamaTag()))
	return "", false
}

// ollamaDecode reads and decodes a body into v, answering errors in
// ollama's shape (readBody and decodeRequest answer OpenAI's).
func (s *Server) ollamaDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			ollamaError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", s.opt.MaxBodyBytes))
		} else {
			ollamaError(w, http.StatusBadRequest, fmt.Sprintf("reading the body: %v", err))
		}
		return false
	}
	if d := jsonDepth(body); d > maxDepth {
		ollamaError(w, http.StatusBadRequest, fmt.Sprintf("JSON nested %d deep, at most %d", d, maxDepth))
		return false
	}
	if err := decode(body, v); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// request turns ollama's options into an engine request (without the
// prompt) through params.request, so that both APIs check values alike;
// numCtx is the request's num_ctx (0: the server's).
func (c *ollamaCommon) request(ctx int) (Request, int, error) {
	format, err := parseOllamaFormat(c.Format) // structured.go
	if err != nil {
		return Request{}, 0, err
	}
	// ollama's defaults, which its users' settings are tuned against.
	temp, topK, topP, rep := 0.8, 40, 0.9, 1.1
	o := c.Options
	if o == nil {
		o = &ollamaOptions{}
	}
	p := params{Temperature: or(o.Temperature, &temp), TopK: or(o.TopK, &topK), TopP: or(o.TopP, &topP), MinP: o.MinP,
		RepeatPenalty: or(o.RepeatPenalty, &rep), RepeatLastN: o.RepeatLastN,
		PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty, Stop: o.Stop}
	// A negative seed is ollama's "random".
	if o.Seed != nil && *o.Seed >= 0 {
		p.Seed = o.Seed
	}
	numCtx := 0
	if o.NumCtx != nil {
		if *o.NumCtx < 1 || *o.NumCtx > ctx {
			return Request{}, 0, fieldErr("options.num_ctx", "options.num_ctx must be in [1, %d] (this server's context, its --ctx-size), got %d", ctx, *o.NumCtx)
		}
		numCtx = *o.NumCtx
	}
	gen, err := p.request(ctx)
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) { // params names the field as OpenAI does: top_k
			return gen, 0, fieldErr("options."+fe.param, "options.%s", fe.msg)
		}
		return gen, 0, err
	}
	gen.Format = format
	gen.MaxTokens = -1
	if o.NumPredict != nil {
		// -1 (endless) and -2 (fill the context) both end with the context.
		if n := *o.NumPredict; n < -2 || n > ctx {
			return gen, 0, fieldErr("options.num_predict", "options.num_predict must be in [-2, %d] (-1, -2: the rest of the context), got %d", ctx, n)
		} else if n >= 0 {
			gen.MaxTokens = n
		}
	}
	return gen, numCtx, nil
}

// ollamaPrepare sets the prompt, within the request's num_ctx.
func (s *Server) ollamaPrepare(gen *Request, prompt []int, numCtx int) error {
	if numCtx > 0 && len(prompt) >= numCtx {
		return fieldErr("options.num_ctx", "the prompt is %d tokens, options.num_ctx is %d", len(prompt), numCtx)
	}
	if err := s.prepare(gen, prompt); err != nil {
		return err
	}
	if numCtx > 0 {
		gen.MaxTokens = min(gen.MaxTokens, numCtx-len(prompt))
	}
	return nil
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var req ollamaChatRequest
	if !s.ollamaDecode(w, r, &req) {
		return
	}
	model, ok := s.ollamaModel(w, req.Model)
	if !ok {
		return
	}
	var items []json.RawMessage
	if isNull(req.Messages) || (json.Unmarshal(req.Messages, &items) == nil && len(items) == 0) {
		// No messages is ollama's way to load a model: it is loaded.
		writeJSON(w, http.StatusOK, map[string]any{"model": model, "created_at": ollamaTime(time.Now()),
			"message": map[string]string{"role": "assistant", "content": ""}, "done": true, "done_reason": "load"})
		return
	}
	msgs, err := parseMessages(req.Messages)
	if err == nil {
		err = noImages(items)
	}
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	gen, numCtx, err := req.request(s.e.Ctx())
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	tmpl := s.e.Template()
	if tmpl == nil {
		ollamaError(w, http.StatusBadRequest, "the model has no chat template (convert it with sipack convert --chat-template FILE); use /api/generate with \"raw\": true")
		return
	}
	tu, err := toolUseOf(req.Tools, nil, tmpl)
	text := ""
	if err == nil {
		text, err = tmpl.RenderTools(msgs, tu.list(), true)
	}
	if err == nil {
		err = s.ollamaPrepare(&gen, chat.Encode(s.e.Tok, text), numCtx)
	}
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.ollamaRun(w, r, req.Stream, gen, arrived, tu.ollamaChatFrame(model))
}

// noImages refuses messages with images: this server reads text only, and
// an answer that ignored them would mislead.
func noImages(items []json.RawMessage) error {
	for i, it := range items {
		var m struct {
			Images json.RawMessage `json:"images"`
		}
		if json.Unmarshal(it, &m) == nil && !isNull(m.Images) && string(m.Images) != "[]" {
			return fieldErr(fmt.Sprintf("messages[%d].images", i), "messages[%d].images: this server reads text only", i)
		}
	}
	return nil
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var req ollamaGenerateRequest
	if !s.ollamaDecode(w, r, &req) {
		return
	}
	model, ok := s.ollamaModel(w, req.Model)
	if !ok {
		return
	}
	// Fields whose meaning this server cannot honour are refused, not
	// ignored: an answer that ignored them would mislead.
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"template", req.Template != nil && *req.Template != ""},
		{"context", !isNull(req.Context) && string(req.Context) != "[]"},
		{"images", !isNull(req.Images) && string(req.Images) != "[]"},
	} {
		if f.set {
			ollamaError(w, http.StatusBadRequest, fmt.Sprintf("%s is not supported by this server", f.name))
			return
		}
	}
	if req.Prompt == nil || *req.Prompt == "" {
		// No prompt is ollama's way to load a model: it is loaded.
		writeJSON(w, http.StatusOK, map[string]any{"model": model, "created_at": ollamaTime(time.Now()),
			"response": "", "done": true, "done_reason": "load"})
		return
	}
	gen, numCtx, err := req.request(s.e.Ctx())
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	// As ollama: with a suffix, the fill-in-the-middle prompt of a model
	// that has its tokens (ollama's templates: prefix, the prompt, suffix,
	// the suffix, middle; code completion plugins send it); else the prompt
	// is a user turn in the chat template, unless the request is raw or the
	// model has no template.
	var ids []int
	if req.Suffix != nil && *req.Suffix != "" {
		var ok bool
		if ids, _, ok = s.fimPrompt(false, *req.Prompt, *req.Suffix, "", nil); !ok {
			ollamaError(w, http.StatusBadRequest, "suffix needs a model with fill-in-the-middle tokens (such as Qwen2.5-Coder); this one has none")
			return
		}
	} else if tmpl := s.e.Template(); tmpl != nil && (req.Raw == nil || !*req.Raw) {
		var msgs []chat.Message
		if req.System != nil && *req.System != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: *req.System})
		}
		text, err := tmpl.Render(append(msgs, chat.Message{Role: "user", Content: *req.Prompt}), true)
		if err != nil {
			ollamaError(w, http.StatusBadRequest, err.Error())
			return
		}
		ids = chat.Encode(s.e.Tok, text)
	} else {
		ids = s.e.Tok.Encode(*req.Prompt, true)
	}
	if err := s.ollamaPrepare(&gen, ids, numCtx); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.ollamaRun(w, r, req.Stream, gen, arrived, func(text string, res *Result) map[string]any {
		return map[string]any{"model": model, "response": text}
	})
}

// ollamaTime is ollama's created_at.
func ollamaTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ollamaRun waits for a slot and generates; it streams NDJSON, one object
// per line, unless stream is false (ollama streams by default). frame makes
// an object of the text (res is nil but in the last; a nil object sends no
// line); the last object says done, why, and the counts and durations
// (nanoseconds).
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, stream *bool, gen Request, arrived time.Time, frame func(string, *Result) map[string]any) {
	sl, release := s.generating(w, r, &gen)
	if sl == nil {
		return
	}
	defer release()
	start := time.Now()
	streaming := stream == nil || *stream
	var line func(v any)
	if streaming {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		line = func(v any) {
			b, _ := json.Marshal(v)
			w.Write(append(b, '\n'))
			if fl != nil {
				fl.Flush()
			}
		}
	}
	gen.OnText = func(t string) {
		if streaming {
			if f := frame(t, nil); f != nil { // nil: nothing to send yet
				f["created_at"], f["done"] = ollamaTime(time.Now()), false
				line(f)
			}
		}
		if s.onText != nil {
			s.onText(r.Context())
		}
	}
	res, err := s.generate(r, sl, gen)
	release()
	if err != nil {
		if streaming {
			line(map[string]string{"error": err.Error()})
		} else {
			ollamaError(w, http.StatusBadRequest, err.Error())
		}
		return
	}
	s.finished(r, res, start)
	text := res.Text
	if streaming {
		text = ""
	}
	f := frame(text, res)
	f["created_at"], f["done"], f["done_reason"] = ollamaTime(time.Now()), true, finishReason(res)
	f["total_duration"] = time.Since(arrived).Nanoseconds()
	f["load_duration"] = start.Sub(arrived).Nanoseconds() // waiting for a slot: the model is loaded
	f["prompt_eval_count"], f["prompt_eval_duration"] = res.PromptTokens, res.Prefill.Nanoseconds()
	f["eval_count"], f["eval_duration"] = res.CompletionTokens, res.Decode.Nanoseconds()
	if streaming {
		line(f)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// ollamaFamily is ollama's family of an architecture: LlamaForCausalLM is
// llama.
func ollamaFamily(arch string) string {
	return strings.ToLower(strings.TrimSuffix(arch, "ForCausalLM"))
}

// parameterCount counts the model's parameters: its dense tensors and the
// three N×H matrices of each sparse FFN layer.
func (s *Server) parameterCount() int64 {
	idx := s.e.opt.Model.Pack.Index
	var n int64
	for i := range idx.DenseTensors {
		n += int64(idx.DenseTensors[i].Elems())
	}
	c := idx.Config
	return n + int64(len(idx.SparseLayers))*3*int64(c.HiddenSize)*int64(c.IntermediateSize)
}

// humanCount is ollama's parameter_size: 8.0B, 135M.
func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// ollamaDetails is a model's details as ollama gives them.
func (s *Server) ollamaDetails() map[string]any {
	idx := s.e.opt.Model.Pack.Index
	fam := ollamaFamily(idx.Config.Architecture)
	return map[string]any{"parent_model": "", "format": "sip", "family": fam, "families": []string{fam},
		"parameter_size": humanCount(s.parameterCount()), "quantization_level": idx.RecordDType.String()}
}

// ollamaDigest identifies the pack by its own content hashes (dense
// tensors, bands and source), so it changes when the pack does, without
// reading the pack.
func (s *Server) ollamaDigest() string {
	idx := s.e.opt.Model.Pack.Index
	h := sha256.New()
	h.Write(idx.SourceHash[:])
	for _, t := range idx.DenseTensors {
		h.Write(t.Hash[:])
	}
	for _, b := range idx.BandHashes {
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ollamaModelEntry is the model as /api/tags and /api/ps list it.
func (s *Server) ollamaModelEntry() map[string]any {
	p := s.e.opt.Model.Pack
	modified := time.Unix(s.created, 0)
	if fi, err := os.Stat(p.Path); err == nil {
		modified = fi.ModTime()
	}
	return map[string]any{"name": s.ollamaTag(), "model": s.ollamaTag(), "modified_at": ollamaTime(modified),
		"size": p.FileSize, "digest": s.ollamaDigest(), "details": s.ollamaDetails()}
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{s.ollamaModelEntry()}})
}

// ollamaPS lists the model as loaded for good (it never unloads); its size
// is the pack's plus the slots' KV caches.
func (s *Server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	m := s.ollamaModelEntry()
	delete(m, "modified_at")
	size := s.e.opt.Model.Pack.FileSize
	for _, sl := range s.all {
		size += int64(sl.CacheBytes())
	}
	m["size"], m["size_vram"], m["context_length"] = size, 0, s.e.Ctx()
	m["expires_at"] = ollamaTime(time.Unix(s.created, 0).AddDate(100, 0, 0))
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{m}})
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersion})
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req ollamaShowRequest
	if !s.ollamaDecode(w, r, &req) {
		return
	}
	model := req.Model
	if model == nil || *model == "" {
		model = req.Name
	}
	if model == nil || *model == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	if _, ok := s.ollamaModel(w, model); !ok {
		return
	}
	c := s.e.opt.Model.Config
	fam := ollamaFamily(c.Architecture)
	info := map[string]any{
		"general.architecture":                    fam,
		"general.parameter_count":                 s.parameterCount(),
		fam + ".context_length":                   c.MaxPositionEmbeddings,
		fam + ".embedding_length":                 c.HiddenSize,
		fam + ".block_count":                      c.NumLayers,
		fam + ".feed_forward_length":              c.IntermediateSize,
		fam + ".attention.head_count":             c.NumHeads,
		fam + ".attention.head_count_kv":          c.NumKVHeads,
		fam + ".attention.key_length":             c.HeadDim,
		fam + ".attention.value_length":           c.HeadDim,
		fam + ".attention.layer_norm_rms_epsilon": c.RMSNormEps,
		fam + ".rope.freq_base":                   c.RopeTheta,
		fam + ".vocab_size":                       c.VocabSize,
	}
	template, caps := "", []string{"completion"}
	params := fmt.Sprintf("num_ctx                        %d", s.e.Ctx())
	if t := s.e.Template(); t != nil {
		template = t.Source
		if t.EOS != "" {
			params += fmt.Sprintf("\nstop                           %q", t.EOS)
		}
	}
	modelfile := fmt.Sprintf("# Served by sirun from %s\nFROM %s\nPARAMETER %s\n", s.e.opt.Model.Pack.Path, s.e.opt.Model.Pack.Path,
		strings.ReplaceAll(params, "\n", "\nPARAMETER "))
	out := map[string]any{"modelfile": modelfile, "parameters": params, "template": template,
		"details": s.ollamaDetails(), "model_info": info, "capabilities": caps, "modified_at": s.ollamaModelEntry()["modified_at"]}
	writeJSON(w, http.StatusOK, out)
}
