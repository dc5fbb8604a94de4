package chokaq

import (
	"reflect"
	"testing"
	"time"

	"github.com/chokaq/chokaq-go/jobs"
)

// EnqueueOpts is the one list of the enqueue options: every field of it
// is the field of jobs.EnqueueParams of the same name and type, and every
// field of jobs.EnqueueParams but the job's type and payload is an option.
// An option added to one and not the other fails here.
func TestEnqueueOptsAreTheOptionsOfEnqueueParams(t *testing.T) {
	opts, params := reflect.TypeFor[EnqueueOpts](), reflect.TypeFor[jobs.EnqueueParams]()
	for i := range opts.NumField() {
		o := opts.Field(i)
		p, ok := params.FieldByName(o.Name)
		if !ok || p.Type != o.Type {
			t.Errorf("EnqueueOpts.%s (%s) has no field of that name and type in jobs.EnqueueParams", o.Name, o.Type)
		}
	}
	for i := range params.NumField() {
		p := params.Field(i)
		if _, ok := opts.FieldByName(p.Name); !ok && p.IsExported() && p.Name != "Type" && p.Name != "Payload" {
			t.Errorf("jobs.EnqueueParams.%s is not an option of EnqueueOpts", p.Name)
		}
	}
}

// sampleOpts sets every option to a value of its type that is not zero,
// made from seed, so two seeds give options that differ in every field.
func sampleOpts(t *testing.T, seed int) EnqueueOpts {
	t.Helper()
	var o EnqueueOpts
	v := reflect.ValueOf(&o).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case string:
			f.SetString(v.Type().Field(i).Name + string(rune('a'+seed)))
		case int:
			f.SetInt(int64(seed + 1))
		case time.Duration:
			f.SetInt(int64(seed+1) * int64(time.Second))
		case time.Time:
			f.Set(reflect.ValueOf(time.Date(2030, 1, 1+seed, 0, 0, 0, 0, time.UTC)))
		case []string:
			f.Set(reflect.ValueOf([]string{"tag" + string(rune('a'+seed))}))
		case bool:
			f.SetBool(true)
		case []int64:
			f.Set(reflect.ValueOf([]int64{int64(seed + 1)}))
		case []byte:
			f.SetBytes([]byte{byte(seed + 1)})
		case map[string]string:
			f.Set(reflect.ValueOf(map[string]string{"k": string(rune('a' + seed))}))
		case *jobs.UniqueOpts:
			f.Set(reflect.ValueOf(&jobs.UniqueOpts{Fields: []string{"f" + string(rune('a'+seed))}}))
		default:
			t.Fatalf("sampleOpts: no sample of option %s (%s): add one", v.Type().Field(i).Name, f.Type())
		}
	}
	return o
}

// plainArgs have no options of their own; ownArgs bring theirs.
type plainArgs struct{}

type ownArgs struct{ own EnqueueOpts }

func (plainArgs) Kind() string { return "k" }

func (ownArgs) Kind() string               { return "k" }
func (a ownArgs) EnqueueOpts() EnqueueOpts { return a.own }

// wantParams checks that each option of p is want's.
func wantParams(t *testing.T, what string, p jobs.EnqueueParams, want EnqueueOpts) {
	t.Helper()
	pv, wv := reflect.ValueOf(p), reflect.ValueOf(want)
	for i := range wv.NumField() {
		name := wv.Type().Field(i).Name
		if got := pv.FieldByName(name).Interface(); !reflect.DeepEqual(got, wv.Field(i).Interface()) {
			t.Errorf("%s: EnqueueParams.%s = %v, want %v", what, name, got, wv.Field(i))
		}
	}
	if p.Type != "k" || string(p.Payload) != "{}" {
		t.Errorf("%s: type %q payload %s", what, p.Type, p.Payload)
	}
}

// Every option reaches the store's form of the job: each one a call sets
// over the Args' own, each one it leaves unset from the Args' own.
func TestEveryEnqueueOptionIsMergedAndConverted(t *testing.T) {
	own, call := sampleOpts(t, 0), sampleOpts(t, 1)
	for _, c := range []struct {
		what      string
		own, call *EnqueueOpts
		want      EnqueueOpts
	}{
		{"options alone", nil, &call, call},
		{"the Args' own alone", &own, nil, own},
		{"options over the Args' own", &own, &call, call},
		{"no options over the Args' own", &own, &EnqueueOpts{}, own},
		// A zero time in another location is still no RunAt.
		{"an unset RunAt", &own, &EnqueueOpts{RunAt: time.Time{}.In(time.FixedZone("x", 3600))}, own},
	} {
		var args Args = plainArgs{}
		if c.own != nil {
			args = ownArgs{own: *c.own}
		}
		p, err := params(args, c.call, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantParams(t, c.what, p, c.want)
	}
	if set := (&EnqueueOpts{}).setOpts(); len(set) != 0 {
		t.Errorf("no options set, setOpts says %v", set)
	}
	if set := call.setOpts(); len(set) != reflect.TypeFor[EnqueueOpts]().NumField() {
		t.Errorf("every option set, setOpts says %v", set)
	}
}
