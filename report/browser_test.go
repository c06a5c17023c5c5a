package report

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfcast/perfcast/model"
	"github.com/perfcast/perfcast/solve"
	"github.com/perfcast/perfcast/solve/sim"
)

// chromium finds a Chromium or Chrome binary. Without one the test is
// skipped, except under CI, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI is set but no Chromium is installed (apt-get install chromium): the report cannot be checked in a browser")
	}
	t.Skip("no Chromium installed (apt-get install chromium); skipping the browser test")
	return ""
}

// artifactDir is where screenshots go: $PERFCAST_ARTIFACTS, or a directory
// under the system's temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PERFCAST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "perfcast-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// headless runs Chromium on a local file with nothing fetched from the
// network and returns its standard output and its log.
func headless(t *testing.T, bin, file string, args ...string) (stdout, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
	}, args...)
	all = append(all, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errb.String())
	}
	return out.String(), errb.String()
}

// consoleLine matches what Chromium logs for every console message and
// uncaught error of a page.
var consoleLine = regexp.MustCompile(`(?m)^\[[^\]]*:CONSOLE[^\]]*\] (.*)$`)

func TestBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()

	// First make sure that console errors are seen at all.
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, []byte(`<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body><script>console.error("probe error"); undefinedFunction();</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, log := headless(t, bin, probe, "--dump-dom")
	if got := consoleLine.FindAllString(log, -1); len(got) < 2 || !strings.Contains(log, "probe error") || !strings.Contains(log, "undefinedFunction") {
		t.Fatalf("Chromium's log does not show console errors, so the report cannot be checked for them; log:\n%s", log)
	}

	// The report of the example shop, simulated at the observed load.
	m, err := model.Load("../examples/models/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	simulate := func(ctx context.Context, m *model.Model) (*solve.Result, error) {
		return sim.New().Solve(ctx, m, solve.Options{Seed: 1, Requests: 20000, Workers: 2})
	}
	r, err := Analyze(context.Background(), m, Options{Solve: simulate, SolveSweep: solveMVA, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, m, r)
	file := filepath.Join(dir, "report.html")
	// After the page's own script, click a header and record the order.
	probeSort := `<script>document.querySelector("#operations thead tr:last-child th:nth-child(2)").click();
document.body.setAttribute("data-sorted", Array.prototype.map.call(document.querySelectorAll("#operations tbody tr"), function (r) { return r.cells[1].getAttribute("data-sort") || ""; }).join(" "));</script></body>`
	if err := os.WriteFile(file, []byte(strings.Replace(page, "</body>", probeSort, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, log := headless(t, bin, file, "--dump-dom")
	for _, line := range consoleLine.FindAllStringSubmatch(log, -1) {
		t.Errorf("console: %s", line[1])
	}
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Error("the report's script did not run to its end")
	}
	for _, want := range []string{`id="summary"`, "The bottleneck is", `id="diagram"`, `id="rt-0"`, `id="util-observed"`, `id="util-sweep"`, `id="operations"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}
	sorted := regexp.MustCompile(`data-sorted="([^"]*)"`).FindStringSubmatch(dom)
	if sorted == nil {
		t.Fatal("sorting did not run")
	}
	var prev float64
	for i, f := range strings.Fields(sorted[1]) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("sorted column holds %q", f)
		}
		if i > 0 && v < prev {
			t.Errorf("a click on Calls/s does not sort ascending: %s", sorted[1])
			break
		}
		prev = v
	}

	// Screenshots, light and dark, kept for people to look at.
	out := artifactDir(t)
	clean := filepath.Join(out, "report-shop.html")
	if err := os.WriteFile(clean, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct{ name, flag string }{{"light", ""}, {"dark", "--force-dark-mode"}} {
		shot := filepath.Join(out, "report-shop-"+mode.name+".png")
		os.Remove(shot)
		args := []string{"--screenshot=" + shot, "--window-size=1280,2400", "--hide-scrollbars"}
		if mode.flag != "" {
			args = append(args, mode.flag, "--blink-settings=preferredColorScheme=0")
		}
		headless(t, bin, clean, args...)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot %s: %v", shot, err)
		}
		// A page that rendered has many colours; a blank one has one.
		colours := map[uint32]bool{}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y += 7 {
			for x := b.Min.X; x < b.Max.X; x += 7 {
				r, g, bl, _ := img.At(x, y).RGBA()
				colours[r>>11<<10|g>>11<<5|bl>>11] = true
			}
		}
		if len(colours) < 20 {
			t.Errorf("%s: only %d colours: the page did not render", shot, len(colours))
		}
		// Dark mode: the top-left corner is the page's background.
		r, g, bl, _ := img.At(5, 5).RGBA()
		light := (r+g+bl)/3 > 0x8000
		if light != (mode.name == "light") {
			t.Errorf("%s: background at the corner is %v light, want %s", shot, light, mode.name)
		}
		t.Logf("screenshot: %s", shot)
	}
}
