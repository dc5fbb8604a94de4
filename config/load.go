package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// Options says where configuration comes from. Later sources override
// earlier ones: appsettings.yaml, then appsettings.<Environment>.yaml,
// then environment variables, then Overrides.
type Options struct {
	// Dir is the directory of appsettings.yaml; "" means ".".
	Dir string
	// File is an explicit base file; when set it must exist. When empty,
	// Dir/appsettings.yaml is optional.
	File string
	// Environment selects the overlay file appsettings.<Environment>.yaml
	// next to the base file (for File x.yaml: x.<Environment>.yaml), which
	// must exist when an environment is named. "" means the
	// CHOKAQ_ENVIRONMENT variable from Env.
	Environment string
	// Env is the environment in os.Environ() form; nil means os.Environ().
	// CHOKAQ__SECTION__KEY variables set keys (names are case-insensitive).
	Env []string
	// Overrides are applied last. Keys are dotted paths relative to the
	// ChokaQ section, case-insensitive, e.g. "Execution.Concurrency" -> "4",
	// "QueueSettings.mail.MaxWorkers" -> "2"; a leading "ChokaQ." is allowed.
	Overrides map[string]string
}

const (
	baseFile       = "appsettings.yaml"
	environmentVar = "CHOKAQ_ENVIRONMENT"
	envPrefix      = "CHOKAQ__"
	envSep         = "__"
	// keySep is viper's key delimiter here instead of '.', because queue
	// names may contain dots; no YAML key in a valid file contains it.
	keySep = "\x1f"
)

// errNotDir is wrapped with fs.ErrNotExist: a file where a directory was
// named is as missing as no file at all.
var errNotDir = fmt.Errorf("not a directory: %w", fs.ErrNotExist)

// setting is one key = value from one source, as written.
type setting struct {
	// path is the key path relative to the ChokaQ section. For a file key
	// outside that section (outside set), it is the full path.
	path    []string
	outside bool
	raw     any
	source  string
	// joinQueue is the separator that split a queue name containing it.
	joinQueue string
	// fromEnv marks an environment variable. Its case says nothing, so a
	// queue name that no YAML file spells is taken in lower case.
	fromEnv bool
}

func (s setting) fail(rule string) error {
	key := strings.Join(s.path, ".")
	if !s.outside {
		key = root + "." + key
		if len(s.path) == 0 {
			key = root
		}
	}
	return newError(key, formatRaw(s.raw), s.source, rule)
}

// entry is one key's parsed value and where it came from.
type entry struct {
	target
	queue    string // the queue's spelling, for queue settings
	schedule string // the schedule's spelling, for schedule keys
	value    any
	origin   origin
}

// Load reads, merges and validates the configuration. Every error about a
// key or value is an *Error wrapping ErrInvalid; a file YAML cannot parse
// gives an error wrapping ErrSyntax; a missing required file, one wrapping
// fs.ErrNotExist.
func Load(opts Options) (*Config, error) {
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	base, required := opts.File, true
	if base == "" {
		base, required = filepath.Join(opts.Dir, baseFile), false
		// The file in it is optional, the directory named is not: a
		// mistyped --config-dir must not run on silent defaults.
		if opts.Dir != "" {
			if fi, err := os.Stat(opts.Dir); err != nil {
				return nil, fmt.Errorf("config: configuration directory: %w", err)
			} else if !fi.IsDir() {
				return nil, fmt.Errorf("config: configuration directory %s: %w", opts.Dir, errNotDir)
			}
		}
	}
	environment, environmentSource := opts.Environment, "Options.Environment"
	if environment == "" {
		environment, environmentSource = lookupEnv(env, environmentVar), environmentVar
	}

	var layers [][]setting
	settings, err := readFile(base, required)
	if err != nil {
		return nil, err
	}
	layers = append(layers, settings)
	if environment != "" {
		if rule := checkEnvironment(environment); rule != "" {
			return nil, newError(environmentSource, environment, "", rule)
		}
		settings, err := readFile(environmentFile(base, environment), true)
		if errors.Is(err, fs.ErrNotExist) {
			// Say why the file was wanted: the variable may be set far away.
			return nil, fmt.Errorf("config: environment %q (%s): %w", environment, environmentSource, errors.Unwrap(err))
		}
		if err != nil {
			return nil, err
		}
		layers = append(layers, settings)
	}
	layers = append(layers, envSettings(env), overrideSettings(opts.Overrides))

	l := loader{entries: map[string]entry{}, queues: map[string]string{}, schedules: map[string]string{}, kinds: map[string]string{}}
	l.learnQueues(layers)
	for i, layer := range layers {
		// Overrides come from one map; two keys that differ only in case
		// would otherwise win in random order.
		unique := i == len(layers)-1
		if err := l.add(layer, unique); err != nil {
			return nil, err
		}
	}
	return l.config(environment)
}

// lookupEnv returns the last value of name, matched case-insensitively as
// the CHOKAQ__ variables are.
func lookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			v = val
		}
	}
	return v
}

// checkEnvironment refuses an environment name that would reach outside
// the configuration directory or could not be a file name.
func checkEnvironment(name string) string {
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '_' || r == '-' || r == '.')
		if !ok {
			return "must be ASCII letters, digits, '_', '-' and '.', starting with a letter or digit"
		}
	}
	return ""
}

// environmentFile is the overlay of base for an environment:
// dir/appsettings.yaml -> dir/appsettings.<environment>.yaml.
func environmentFile(base, environment string) string {
	dir, file := filepath.Split(base)
	ext := filepath.Ext(file)
	stem := strings.TrimSuffix(file, ext)
	if ext == "" {
		ext = ".yaml"
	}
	return filepath.Join(dir, stem+"."+environment+ext)
}

// readFile reads one YAML file into settings. Viper parses it and supplies
// the values; the file is also decoded as a YAML node tree, because viper
// lowercases keys and queue names keep their case.
func readFile(path string, required bool) ([]setting, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if !required && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	v := viper.NewWithOptions(viper.KeyDelimiter(keySep))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(b)); err != nil {
		if pe, ok := errors.AsType[viper.ConfigParseError](err); ok {
			err = pe.Unwrap()
		}
		return nil, syntaxError(path, b, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, syntaxError(path, b, err)
	}
	spelled := map[string][]string{}
	if err := spell(&doc, "", nil, path, spelled); err != nil {
		return nil, err
	}

	// A schedule's Payload written as a mapping or a list is one value,
	// JSON, taken from the YAML tree: viper would split it into keys, and
	// lowercase them.
	out := append(payloadSettings(&doc, path), emptySchedules(&doc, path)...)
	whole := map[string]bool{}
	for _, s := range out {
		whole[strings.ToLower(root+keySep+strings.Join(s.path, keySep))] = true
	}
	for _, k := range slices.Sorted(slices.Values(v.AllKeys())) {
		if under(k, whole) {
			continue
		}
		raw := v.Get(k)
		if raw == nil {
			continue // an empty key or section, like .NET's: not set
		}
		full, ok := spelled[k]
		if !ok {
			full = strings.Split(k, keySep)
		}
		s := setting{path: full[1:], raw: raw, source: path, joinQueue: keySep}
		if !strings.EqualFold(full[0], root) {
			s.path, s.outside = full, true
		}
		out = append(out, s)
	}
	return out, nil
}

// payloadSettings finds the schedules' Payload values that are mappings or
// lists in a file's YAML tree and returns each as one setting holding its
// JSON, keys as written.
func payloadSettings(doc *yaml.Node, file string) []setting {
	var out []setting
	chokaq := child(doc, root)
	for name, def := range children(child(chokaq, scheduleSection)) {
		key, payload := childKey(def, "Payload")
		for payload != nil && payload.Kind == yaml.AliasNode {
			payload = payload.Alias
		}
		if payload == nil || (payload.Kind != yaml.MappingNode && payload.Kind != yaml.SequenceNode) {
			continue // a scalar goes through viper like any value
		}
		var raw any = struct{}{} // not JSON: parse says so
		var v any
		if payload.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				raw = jsonValue(b)
			}
		}
		out = append(out, setting{path: []string{scheduleSection, name, key}, raw: raw, source: file, joinQueue: keySep})
	}
	return out
}

// emptySchedules finds the schedule sections of a file's YAML tree that
// hold nothing (nightly: or nightly: {}), which viper drops as unset, and
// returns each as its Cron set to "": a schedule named and left empty is a
// mistake, and gets the error of one without Cron (unless a later source
// sets it).
func emptySchedules(doc *yaml.Node, file string) []setting {
	var out []setting
	defs := children(child(child(doc, root), scheduleSection))
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		def := defs[name]
		for def.Kind == yaml.AliasNode && def.Alias != nil {
			def = def.Alias
		}
		null := def.Kind == yaml.ScalarNode && def.Tag == "!!null"
		if null || def.Kind == yaml.MappingNode && len(def.Content) == 0 {
			out = append(out, setting{path: []string{scheduleSection, name, "Cron"}, raw: "", source: file, joinQueue: keySep})
		}
	}
	return out
}

// under reports whether viper key k is, or lies under, one of prefixes.
func under(k string, prefixes map[string]bool) bool {
	for p := range prefixes {
		if k == p || strings.HasPrefix(k, p+keySep) {
			return true
		}
	}
	return false
}

// child is the value of n's key name (matched ignoring case), n a document
// or a mapping; nil if none.
func child(n *yaml.Node, name string) *yaml.Node {
	_, v := childKey(n, name)
	return v
}

// childKey is child, with the key as written.
func childKey(n *yaml.Node, name string) (string, *yaml.Node) {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return "", nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if strings.EqualFold(n.Content[i].Value, name) {
			return n.Content[i].Value, n.Content[i+1]
		}
	}
	return "", nil
}

// children are a mapping's values by key as written.
func children(n *yaml.Node) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n == nil || n.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = n.Content[i+1]
	}
	return out
}

// spell records, for every key path in n, its segments as written under
// the lowercased path viper uses, and refuses two keys of one mapping that
// differ only in case: viper would keep one of them at random.
func spell(n *yaml.Node, lower string, path []string, file string, out map[string][]string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := spell(c, lower, path, file, out); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			return spell(n.Alias, lower, path, file, out)
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				if err := spell(val, lower, path, file, out); err != nil {
					return err
				}
				continue
			}
			key := strings.ToLower(k.Value)
			p := append(slices.Clip(path), k.Value)
			if line, dup := seen[key]; dup {
				rule := fmt.Sprintf("is set twice, at lines %d and %d (keys are case-insensitive)", line, k.Line)
				if len(p) == 3 && strings.EqualFold(p[0], root) && strings.EqualFold(p[1], kindSection) {
					rule = fmt.Sprintf("names kind %q, which differs only by case from the kind at line %d: kinds compare exactly "+
						"but configuration keys ignore case, so the two cannot be told apart (rename one kind)", k.Value, line)
				}
				return newError(strings.Join(p, "."), "", file, rule)
			}
			seen[key] = k.Line
			if lower != "" {
				key = lower + keySep + key
			}
			out[key] = p
			if err := spell(val, key, p, file, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// envSettings reads the CHOKAQ__SECTION__KEY variables.
func envSettings(env []string) []setting {
	var out []setting
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || len(name) < len(envPrefix) || !strings.EqualFold(name[:len(envPrefix)], envPrefix) {
			continue
		}
		out = append(out, setting{
			path:      strings.Split(name[len(envPrefix):], envSep),
			raw:       val,
			source:    "environment (" + name + ")",
			joinQueue: envSep,
			fromEnv:   true,
		})
	}
	return out
}

// overrideSettings reads Options.Overrides, in key order.
func overrideSettings(overrides map[string]string) []setting {
	var out []setting
	for _, k := range slices.Sorted(maps.Keys(overrides)) {
		path := strings.Split(k, ".")
		if len(path) > 1 && strings.EqualFold(path[0], root) {
			path = path[1:]
		}
		out = append(out, setting{path: path, raw: overrides[k], source: "override", joinQueue: "."})
	}
	return out
}

// loader merges settings, later ones replacing earlier ones key by key.
type loader struct {
	entries map[string]entry // by lowercased key path
	// queues maps each lowercased queue name to its spelling: the first
	// YAML QueueSettings spelling, else the first Queues list entry.
	queues map[string]string
	// schedules maps each lowercased schedule name to its first YAML
	// spelling.
	schedules map[string]string
	// kinds maps each lowercased job kind to its first spelling outside
	// the environment: kinds compare exactly, so a second spelling that
	// differs only by case is refused, not merged.
	kinds map[string]string
}

// learnQueues records the spellings of queue names before any setting is
// added, so that a queue set from the environment takes its YAML case.
func (l *loader) learnQueues(layers [][]setting) {
	remember := func(q string) {
		if _, ok := l.queues[strings.ToLower(q)]; !ok {
			l.queues[strings.ToLower(q)] = q
		}
	}
	for _, layer := range layers {
		for _, s := range layer {
			t, rule := match(s.path, s.joinQueue)
			if rule != "" || s.outside || s.fromEnv {
				continue
			}
			if t.qkey != nil {
				remember(t.queue)
			}
			if _, ok := l.schedules[strings.ToLower(t.schedule)]; t.skey != nil && !ok {
				l.schedules[strings.ToLower(t.schedule)] = t.schedule
			}
			if _, ok := l.kinds[strings.ToLower(t.jobKind)]; t.kkey != nil && !ok {
				l.kinds[strings.ToLower(t.jobKind)] = t.jobKind
			}
		}
	}
	for _, layer := range layers {
		for _, s := range layer {
			if t, rule := match(s.path, s.joinQueue); rule == "" && !s.outside && t.key != nil && t.key.kind == kindQueues {
				if qs, rule := parse(kindQueues, s.raw); rule == "" {
					for _, q := range qs.([]string) {
						remember(q)
					}
				}
			}
		}
	}
}

// add parses a layer's settings into l. With unique, two settings of the
// layer naming one key are an error.
func (l *loader) add(layer []setting, unique bool) error {
	seen := map[string]string{}
	for _, s := range layer {
		if s.outside {
			return s.fail(outsideRule(s.path))
		}
		if len(s.path) == 1 && strings.EqualFold(s.path[0], "Environment") && s.fromEnv {
			return s.fail("unknown key (the environment is chosen by " + environmentVar + ", with one underscore)")
		}
		t, rule := match(s.path, s.joinQueue)
		if rule != "" {
			return s.fail(rule)
		}
		e := entry{target: t}
		var name string
		var k kind
		switch {
		case t.key != nil:
			name, k = t.key.name, t.key.kind
		case t.skey != nil:
			e.schedule = spelling(l.schedules, t.schedule, s.fromEnv)
			name, k = scheduleSection+"."+e.schedule+"."+t.skey.name, t.skey.kind
		case t.kkey != nil:
			e.jobKind = spelling(l.kinds, t.jobKind, s.fromEnv)
			if !s.fromEnv && e.jobKind != t.jobKind {
				return s.fail(fmt.Sprintf("names kind %q, which differs only by case from kind %q set elsewhere: kinds compare exactly "+
					"but configuration keys ignore case, so the two cannot be told apart (rename one kind)", t.jobKind, e.jobKind))
			}
			name, k = kindSection+"."+e.jobKind+"."+t.kkey.name, t.kkey.kind
		default:
			e.queue = spelling(l.queues, t.queue, s.fromEnv)
			name, k = queueSection+"."+e.queue+"."+t.qkey.name, t.qkey.kind
		}
		id := strings.ToLower(name)
		if t.qkey != nil && t.qkey.section {
			// A concurrency key compares exactly, so it keeps its case in
			// the entry's id too: Tenant and tenant are two keys.
			name += "." + t.flowKey
			id += "." + t.flowKey
		}
		e.origin = origin{key: root + "." + name, value: formatRaw(s.raw), source: s.source}
		v, rule := parse(k, s.raw)
		if rule != "" {
			return newError(e.origin.key, e.origin.value, s.source, rule)
		}
		e.value = v
		if prev, dup := seen[id]; dup && unique {
			return s.fail("is set twice (also as " + prev + ")")
		}
		seen[id] = strings.Join(s.path, ".")
		l.entries[id] = e
	}
	return nil
}

// spelling is how a queue or schedule name is written: as a YAML file
// first spelled it (known), else as given, except that an environment
// variable's case says nothing and its name is taken in lower case.
func spelling(known map[string]string, name string, fromEnv bool) string {
	if k := known[strings.ToLower(name)]; k != "" {
		return k
	}
	if fromEnv {
		return strings.ToLower(name)
	}
	return name
}

// outsideRule is the rule for a file key outside the ChokaQ section. It
// suggests the key under ChokaQ when the file forgot or misspelled the
// section.
func outsideRule(path []string) string {
	for _, p := range [][]string{path, path[1:]} {
		if t, rule := match(p, "."); rule == "" && len(p) > 0 {
			var name string
			switch {
			case t.key != nil:
				name = t.key.name
			case t.skey != nil:
				name = scheduleSection + "." + t.schedule + "." + t.skey.name
			case t.kkey != nil:
				name = kindSection + "." + t.jobKind + "." + t.kkey.name
			default:
				name = queueSection + "." + t.queue + "." + t.qkey.name
				if t.qkey.section {
					name += "." + t.flowKey
				}
			}
			return "unknown key (did you mean " + root + "." + name + "?)"
		}
	}
	if distance(strings.ToLower(path[0]), strings.ToLower(root)) <= 2 {
		return "unknown key (did you mean " + root + "?)"
	}
	return "unknown key (settings live under the " + root + " section)"
}

// config applies the merged entries to the defaults, resolves the legacy
// aliases and validates the result.
func (l *loader) config(environment string) (*Config, error) {
	c := Default()
	c.Environment = environment
	origins := map[string]origin{}
	// noteSection records where a named section's key came from, and where
	// the section itself was first named.
	noteSection := func(section, name, key string, o origin) {
		origins[section+"."+key] = o
		if _, ok := origins[section]; !ok {
			origins[section] = origin{key: root + "." + section, value: name, source: o.source}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(l.entries)) {
		e := l.entries[id]
		switch {
		case e.key != nil && e.key.alias == "":
			e.key.set(c, e.value)
			origins[e.key.name] = e.origin
		case e.skey != nil:
			sc := c.Schedules[e.schedule]
			sc.Name = e.schedule
			e.skey.set(&sc, e.value)
			c.Schedules[e.schedule] = sc
			noteSection(scheduleSection+"."+e.schedule, e.schedule, e.skey.name, e.origin)
		case e.kkey != nil:
			kp := c.Kinds[e.jobKind]
			e.kkey.set(&kp, e.value)
			c.Kinds[e.jobKind] = kp
			noteSection(kindSection+"."+e.jobKind, e.jobKind, e.kkey.name, e.origin)
		case e.qkey != nil && e.qkey.section:
			qs := c.QueueSettings[e.queue]
			setKeyLimit(&qs, e.flowKey, e.value.(int))
			c.QueueSettings[e.queue] = qs
			noteSection(queueSection+"."+e.queue, e.queue, e.qkey.name+"."+e.flowKey, e.origin)
		case e.qkey != nil:
			qs := c.QueueSettings[e.queue]
			e.qkey.set(&qs, e.value)
			c.QueueSettings[e.queue] = qs
			noteSection(queueSection+"."+e.queue, e.queue, e.qkey.name, e.origin)
		}
	}
	// A legacy key and its successor are compared after merging each
	// across all sources: whichever source set them, they must agree.
	for _, k := range keys {
		if k.alias == "" {
			continue
		}
		a, aliasSet := l.entries[strings.ToLower(k.name)]
		n, newSet := l.entries[strings.ToLower(k.alias)]
		switch {
		case aliasSet && newSet && a.value != n.value:
			return nil, newError(a.origin.key, a.origin.value, a.origin.source,
				fmt.Sprintf("conflicts with %s = %s (%s); set only one of them, or both to the same value",
					n.origin.key, displayValue(n.origin.value), n.origin.source))
		case aliasSet && !newSet:
			findKey(k.alias).set(c, a.value)
			origins[k.alias] = a.origin
		}
	}
	if err := c.validate(origins); err != nil {
		return nil, err
	}
	return c, nil
}
