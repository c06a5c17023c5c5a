package extract

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/perfcast/perfcast/ingest"
)

// ComponentRule names the component of the operations whose spans match
// it, where service.name alone would not: one service that is several
// components (its admin pages on their own pods), or several services that
// are one. Every condition given must hold; a rule gives at least one.
// Patterns are globs over the whole value: * matches any run of
// characters, ? any one.
type ComponentRule struct {
	// Component is the name the matching operations' component gets.
	Component string `yaml:"component"`
	// Service matches service.name.
	Service string `yaml:"service"`
	// Span matches the span's name or the operation name extraction gives
	// it (HTTP route, identifiers folded).
	Span string `yaml:"span"`
	// Attributes match span or resource attributes by name; a span that
	// lacks one does not match.
	Attributes map[string]string `yaml:"attributes"`

	line int // in the configuration file, 0 when not read from one
}

// ruleKeys are the keys of a rule.
var ruleKeys = []string{"component", "service", "span", "attributes"}

// UnmarshalYAML decodes a rule and keeps its line, for error messages. A
// key it does not know is an error, as the decoder's KnownFields makes it
// elsewhere (it does not reach into a type's own decoding).
func (r *ComponentRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var unknown []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(ruleKeys, k.Value) {
				unknown = append(unknown, fmt.Sprintf("line %d: field %s not found in type extract.ComponentRule", k.Line, k.Value))
			}
		}
		if len(unknown) > 0 {
			return &yaml.TypeError{Errors: unknown}
		}
	}
	type plain ComponentRule
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = ComponentRule(p)
	r.line = n.Line
	return nil
}

// compiledRule is a rule with its patterns compiled.
type compiledRule struct {
	component     string
	service, span *regexp.Regexp
	attrs         []string // attribute names, sorted
	values        []*regexp.Regexp
}

// glob compiles a glob pattern into an anchored regular expression; nil
// for the empty pattern, which matches anything.
func glob(pattern string) *regexp.Regexp {
	if pattern == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("(?s)^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// lineError is a configuration error at a line of its file (0: unknown).
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

// checkRules reports the first rule that names no component or gives no
// condition.
func checkRules(rules []ComponentRule) error {
	for i, r := range rules {
		if err := checkRule(r); err != nil {
			return &lineError{line: r.line, msg: fmt.Sprintf("components[%d]: %v", i, err)}
		}
	}
	return nil
}

func checkRule(r ComponentRule) error {
	switch {
	case strings.TrimSpace(r.Component) == "":
		return fmt.Errorf("a rule needs the component it names")
	case r.Service == "" && r.Span == "" && len(r.Attributes) == 0:
		return fmt.Errorf("a rule needs a condition: service, span or attributes")
	case slices.Contains(slices.Collect(maps.Keys(r.Attributes)), ""):
		return fmt.Errorf("attributes: an attribute needs a name")
	}
	return nil
}

// ruleSet holds a configuration's compiled rules, built on first use.
type ruleSet struct {
	once  sync.Once
	rules []compiledRule
}

func (rs *ruleSet) get(rules []ComponentRule) []compiledRule {
	rs.once.Do(func() {
		for _, r := range rules {
			cr := compiledRule{component: r.Component, service: glob(r.Service), span: glob(r.Span)}
			for _, k := range slices.Sorted(maps.Keys(r.Attributes)) {
				cr.attrs = append(cr.attrs, k)
				cr.values = append(cr.values, glob(r.Attributes[k]))
			}
			rs.rules = append(rs.rules, cr)
		}
	})
	return rs.rules
}

// match reports whether the rule matches a span whose operation extraction
// names op.
func (r *compiledRule) match(sp *ingest.Span, op string) bool {
	if r.service != nil && !r.service.MatchString(sp.Service) {
		return false
	}
	if r.span != nil && !r.span.MatchString(sp.Name) && !r.span.MatchString(op) {
		return false
	}
	for i, k := range r.attrs {
		v, ok := sp.Lookup(k)
		if !ok || r.values[i] != nil && !r.values[i].MatchString(v) {
			return false
		}
	}
	return true
}

// ruleComponent is the component the first matching rule names, if any.
func (c *Config) ruleComponent(sp *ingest.Span, op string) (string, bool) {
	if c == nil || len(c.Components) == 0 {
		return "", false
	}
	for i := range c.compiled.get(c.Components) {
		r := &c.compiled.rules[i]
		if r.match(sp, op) {
			return r.component, true
		}
	}
	return "", false
}
