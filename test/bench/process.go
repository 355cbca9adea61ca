package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/nudgeflow/nudgeflow/test/devenv"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// workerProcess is a nudgeflow command (`nudgeflow worker`, `nudgeflow bridge`) in
// its own OS process, so that its memory is measured alone.
type workerProcess struct {
	name string // "nudgeflow worker", for messages
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// startWorker runs `<self> worker ARGS...` through the parent-death exec, so the
// worker dies with the bench (Linux).
func startWorker(self string, args, env []string, logPath string) (*workerProcess, error) {
	return startCommand(self, "worker", args, env, logPath)
}

// startCommand runs `<binary> SUBCOMMAND ARGS...` through the parent-death exec of
// this process (any nudgeflow binary of this repository has it), so it dies with
// the bench (Linux).
func startCommand(binary, subcommand string, args, env []string, logPath string) (*workerProcess, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the nudgeflow binary: %w", err)
	}
	argv := append([]string{localenv.ParentDeathExecArg, strconv.Itoa(os.Getpid()), binary, subcommand}, args...)
	p := &workerProcess{name: "nudgeflow " + subcommand, cmd: exec.Command(self, argv...), log: log, done: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = log, log
	var startErr error
	localenv.OnLongLivedThread(func() { startErr = p.cmd.Start() })
	if startErr != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", p.name, startErr)
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

func (p *workerProcess) pid() int { return p.cmd.Process.Pid }

// stop asks the process to stop (SIGTERM: it finishes what it runs) and kills it
// when it has not stopped within grace.
func (p *workerProcess) stop(grace time.Duration) {
	defer p.log.Close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports an error when the process has ended.
func (p *workerProcess) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited (%v); its log: %s", p.name, err, p.log.Name())
	default:
		return nil
	}
}

// ProcessMemory reads VmRSS and VmHWM (peak) of a process, in bytes.
func ProcessMemory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s of pid %d: %w", key, pid, err)
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			peak = kb * 1024
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return rss, peak, sc.Err()
}

// polling reports whether the process with pid polls the task queue for workflow
// and activity tasks (the SDK's default identity starts with "<pid>@").
func polling(ctx context.Context, c client.Client, namespace, taskQueue string, pid int) (bool, error) {
	for _, t := range []enums.TaskQueueType{enums.TASK_QUEUE_TYPE_WORKFLOW, enums.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: namespace, TaskQueue: &taskqueuepb.TaskQueue{Name: taskQueue, Kind: enums.TASK_QUEUE_KIND_NORMAL}, TaskQueueType: t,
		})
		if err != nil {
			return false, fmt.Errorf("describing task queue %s: %w", taskQueue, err)
		}
		found := false
		for _, p := range resp.GetPollers() {
			if strings.HasPrefix(p.GetIdentity(), strconv.Itoa(pid)+"@") {
				found = true
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// backlog is the task queue's approximate backlog of workflow and activity tasks
// (sticky queues excluded: their tasks live seconds).
func backlog(ctx context.Context, c client.Client, namespace, taskQueue string) (int64, error) {
	var n int64
	for _, t := range []enums.TaskQueueType{enums.TASK_QUEUE_TYPE_WORKFLOW, enums.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: namespace, TaskQueue: &taskqueuepb.TaskQueue{Name: taskQueue, Kind: enums.TASK_QUEUE_KIND_NORMAL}, TaskQueueType: t,
			ReportStats: true,
		})
		if err != nil {
			return 0, fmt.Errorf("describing task queue %s: %w", taskQueue, err)
		}
		n += resp.GetStats().GetApproximateBacklogCount()
	}
	return n, nil
}

// cpuSeconds is the CPU time (user + system) used so far by this process and its
// children (kube-apiserver, etcd, the Temporal server, the worker), by name: this
// process is "bench+bridge", the worker process "worker".
func cpuSeconds(workerPID int) map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	read := func(pid int) (name string, ppid int, secs float64, ok bool) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return "", 0, 0, false
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold spaces.
		s := string(raw)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			return "", 0, 0, false
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 13 {
			return "", 0, 0, false
		}
		ppid, _ = strconv.Atoi(fields[1])
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		return s[open+1 : closing], ppid, (utime + stime) / clockTicks, true
	}
	if _, _, secs, ok := read(self); ok {
		out["bench+bridge"] = secs
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		name, ppid, secs, ok := read(pid)
		if !ok || ppid != self {
			continue
		}
		if pid == workerPID {
			name = "worker"
		}
		out[name] += secs
	}
	return out
}

// machineBusy is the CPU time (seconds, all CPUs) the whole machine spent busy so
// far (devenv.MachineBusy).
func machineBusy() float64 { return devenv.MachineBusy() }

// cpuUse is what one interval of a measure cost: each process's CPU seconds and
// the machine's busy cores.
type cpuUse struct {
	before, after map[string]float64
	busyCores     float64
}

// measureCPU runs fn and returns what it cost in CPU.
func measureCPU(workerPID int, fn func() error) (cpuUse, error) {
	before, busy0, began := cpuSeconds(workerPID), machineBusy(), time.Now()
	err := fn()
	u := cpuUse{before: before, after: cpuSeconds(workerPID)}
	if d := time.Since(began).Seconds(); d > 0 {
		u.busyCores = (machineBusy() - busy0) / d
	}
	return u, err
}

func (u cpuUse) of(names ...string) float64 {
	total := 0.0
	for _, n := range names {
		total += u.after[n] - u.before[n]
	}
	return total
}

func (u cpuUse) String() string { return cpuDelta(u.before, u.after) }

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// cpuDelta formats the CPU seconds each process used between two readings,
// busiest first.
func cpuDelta(before, after map[string]float64) string {
	type use struct {
		name string
		secs float64
	}
	var uses []use
	for name, a := range after {
		if d := a - before[name]; d >= 0.05 {
			uses = append(uses, use{name, d})
		}
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].secs > uses[j].secs })
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%s:%.1f", u.name, u.secs)
	}
	return strings.Join(parts, ",")
}
