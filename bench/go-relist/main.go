// SPDX-License-Identifier: Apache-2.0
//
// go-relist: a straightforward Go port of upstream kubelet's GenericPLEG
// relist (pkg/kubelet/pleg/generic.go) over the runtime manager's GetPods
// and GetPodStatus (pkg/kubelet/kuberuntime), the yardstick of issue 18.
//
// The runtime service replays the CRI responses bench_relist_pb recorded
// (--dump DIR: state-NNNN.bin, each the responses that changed since the
// previous state) and unmarshals them on every call, as a gRPC client would.
// The sequence of relists is the C bench's: two warm-up relists, then per
// round a no-change relist, the next state, a changed relist. It prints the
// median process CPU time (getrusage, every thread: the GC's too) per relist.
//
// Written for cubelet following upstream's structure; it is not upstream's code.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	runtimeapi "cri/runtime"
)

// ---------------------------------------------------------------------------
// kubecontainer types (pkg/kubelet/container)

type UID string

type ContainerID struct {
	Type string
	ID   string
}

type State string

const (
	ContainerStateCreated State = "created"
	ContainerStateRunning State = "running"
	ContainerStateExited  State = "exited"
	ContainerStateUnknown State = "unknown"
)

type Container struct {
	ID      ContainerID
	Name    string
	Image   string
	ImageID string
	Hash    uint64
	State   State
}

type Pod struct {
	ID         UID
	Name       string
	Namespace  string
	CreatedAt  uint64
	Containers []*Container
	Sandboxes  []*Container
}

func (p *Pod) FindContainerByID(id ContainerID) *Container {
	for _, c := range p.Containers {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (p *Pod) FindSandboxByID(id ContainerID) *Container {
	for _, c := range p.Sandboxes {
		if c.ID == id {
			return c
		}
	}
	return nil
}

type Status struct {
	ID           ContainerID
	Name         string
	State        State
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Image        string
	ImageID      string
	Hash         uint64
	RestartCount int
	Reason       string
	Message      string
}

type PodStatus struct {
	ID                UID
	Name              string
	Namespace         string
	IPs               []string
	ContainerStatuses []*Status
	SandboxStatuses   []*runtimeapi.PodSandboxStatus
}

// ---------------------------------------------------------------------------
// The runtime service: replayed CRI responses, unmarshalled per call

const (
	podUIDLabel                     = "io.kubernetes.pod.uid"
	podNameLabel                    = "io.kubernetes.pod.name"
	podNamespaceLabel               = "io.kubernetes.pod.namespace"
	containerNameLabel              = "io.kubernetes.container.name"
	containerHashAnnotation         = "io.kubernetes.container.hash"
	containerRestartCountAnnotation = "io.kubernetes.container.restartCount"
)

// runtimeService is the part of the CRI runtime service the relist uses.
type runtimeService interface {
	ListPodSandbox(filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	PodSandboxStatus(id string) (*runtimeapi.PodSandboxStatusResponse, error)
	ContainerStatus(id string) (*runtimeapi.ContainerStatusResponse, error)
}

// fakeRuntimeService answers from the recorded response bytes, unmarshalled
// on every call: the CRI client's path minus the transport.
type fakeRuntimeService struct {
	responses map[string][]byte
}

func (f *fakeRuntimeService) get(method, key string, m proto.Message) error {
	b, ok := f.responses[method+"/"+key]
	if !ok {
		return fmt.Errorf("%s/%s not recorded", method, key)
	}
	return proto.Unmarshal(b, m)
}

func (f *fakeRuntimeService) ListPodSandbox(filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp := &runtimeapi.ListPodSandboxResponse{}
	if err := f.get("ListPodSandbox", filter.GetLabelSelector()[podUIDLabel], resp); err != nil {
		return nil, err
	}
	return resp.Items, nil
}

func (f *fakeRuntimeService) ListContainers(filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp := &runtimeapi.ListContainersResponse{}
	if err := f.get("ListContainers", filter.GetLabelSelector()[podUIDLabel], resp); err != nil {
		return nil, err
	}
	return resp.Containers, nil
}

func (f *fakeRuntimeService) PodSandboxStatus(id string) (*runtimeapi.PodSandboxStatusResponse, error) {
	resp := &runtimeapi.PodSandboxStatusResponse{}
	if err := f.get("PodSandboxStatus", id, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

func (f *fakeRuntimeService) ContainerStatus(id string) (*runtimeapi.ContainerStatusResponse, error) {
	resp := &runtimeapi.ContainerStatusResponse{}
	if err := f.get("ContainerStatus", id, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// memRuntimeService holds the node as decoded messages (decoded when a
// state is applied, outside the timed relists) and answers each call as
// the CRI API's in-memory FakeRuntimeService does: a new message per item,
// its fields copied, nested messages and maps shared. This is the Go
// counterpart of cubelet's runtime manager over the simulated runtime.
type memRuntimeService struct {
	msgs map[string]proto.Message
}

func (f *memRuntimeService) get(method, key string) (proto.Message, error) {
	m, ok := f.msgs[method+"/"+key]
	if !ok {
		return nil, fmt.Errorf("%s/%s not recorded", method, key)
	}
	return m, nil
}

func (f *memRuntimeService) ListPodSandbox(filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	m, err := f.get("ListPodSandbox", filter.GetLabelSelector()[podUIDLabel])
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range m.(*runtimeapi.ListPodSandboxResponse).Items {
		out = append(out, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State,
			CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations,
			RuntimeHandler: s.RuntimeHandler})
	}
	return out, nil
}

func (f *memRuntimeService) ListContainers(filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	m, err := f.get("ListContainers", filter.GetLabelSelector()[podUIDLabel])
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.Container
	for _, c := range m.(*runtimeapi.ListContainersResponse).Containers {
		out = append(out, &runtimeapi.Container{Id: c.Id, PodSandboxId: c.PodSandboxId,
			Metadata: c.Metadata, Image: c.Image, ImageRef: c.ImageRef, State: c.State,
			CreatedAt: c.CreatedAt, Labels: c.Labels, Annotations: c.Annotations, ImageId: c.ImageId})
	}
	return out, nil
}

func (f *memRuntimeService) PodSandboxStatus(id string) (*runtimeapi.PodSandboxStatusResponse, error) {
	m, err := f.get("PodSandboxStatus", id)
	if err != nil {
		return nil, err
	}
	s := m.(*runtimeapi.PodSandboxStatusResponse).Status
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: s.Id,
		Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Network: s.Network,
		Labels: s.Labels, Annotations: s.Annotations, RuntimeHandler: s.RuntimeHandler}}, nil
}

func (f *memRuntimeService) ContainerStatus(id string) (*runtimeapi.ContainerStatusResponse, error) {
	m, err := f.get("ContainerStatus", id)
	if err != nil {
		return nil, err
	}
	s := m.(*runtimeapi.ContainerStatusResponse).Status
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: s.Id,
		Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, StartedAt: s.StartedAt,
		FinishedAt: s.FinishedAt, ExitCode: s.ExitCode, Image: s.Image, ImageRef: s.ImageRef,
		Reason: s.Reason, Message: s.Message, Labels: s.Labels, Annotations: s.Annotations,
		Mounts: s.Mounts, LogPath: s.LogPath, ImageId: s.ImageId}}, nil
}

// decode unmarshals one recorded response into its message.
func decode(method string, b []byte) (proto.Message, error) {
	var m proto.Message
	switch method {
	case "ListPodSandbox":
		m = &runtimeapi.ListPodSandboxResponse{}
	case "ListContainers":
		m = &runtimeapi.ListContainersResponse{}
	case "PodSandboxStatus":
		m = &runtimeapi.PodSandboxStatusResponse{}
	case "ContainerStatus":
		m = &runtimeapi.ContainerStatusResponse{}
	default:
		return nil, fmt.Errorf("unknown method %q", method)
	}
	return m, proto.Unmarshal(b, m)
}

// ---------------------------------------------------------------------------
// kubeGenericRuntimeManager: GetPods, GetPodStatus

type runtimeManager struct {
	runtimeName    string
	runtimeService runtimeService
}

type labeledContainerInfo struct {
	ContainerName string
	PodName       string
	PodNamespace  string
	PodUID        UID
}

func getContainerInfoFromLabels(labels map[string]string) *labeledContainerInfo {
	return &labeledContainerInfo{
		PodName:       labels[podNameLabel],
		PodNamespace:  labels[podNamespaceLabel],
		PodUID:        UID(labels[podUIDLabel]),
		ContainerName: labels[containerNameLabel],
	}
}

type annotatedContainerInfo struct {
	Hash         uint64
	RestartCount int
}

func getContainerInfoFromAnnotations(annotations map[string]string) *annotatedContainerInfo {
	info := &annotatedContainerInfo{}
	if v, ok := annotations[containerHashAnnotation]; ok {
		if h, err := strconv.ParseUint(v, 16, 64); err == nil {
			info.Hash = h
		}
	}
	if v, ok := annotations[containerRestartCountAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			info.RestartCount = n
		}
	}
	return info
}

func toKubeContainerState(s runtimeapi.ContainerState) State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerStateExited
	}
	return ContainerStateUnknown
}

func sandboxToContainerState(s runtimeapi.PodSandboxState) State {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return ContainerStateRunning
	}
	return ContainerStateExited
}

func (m *runtimeManager) toKubeContainer(c *runtimeapi.Container) *Container {
	annotatedInfo := getContainerInfoFromAnnotations(c.Annotations)
	return &Container{
		ID:      ContainerID{Type: m.runtimeName, ID: c.Id},
		Name:    c.GetMetadata().GetName(),
		ImageID: c.ImageRef,
		Image:   c.GetImage().GetImage(),
		Hash:    annotatedInfo.Hash,
		State:   toKubeContainerState(c.State),
	}
}

func (m *runtimeManager) sandboxToKubeContainer(s *runtimeapi.PodSandbox) *Container {
	return &Container{
		ID:    ContainerID{Type: m.runtimeName, ID: s.Id},
		State: sandboxToContainerState(s.State),
	}
}

func (m *runtimeManager) GetPods(all bool) ([]*Pod, error) {
	pods := make(map[UID]*Pod)
	sandboxFilter := &runtimeapi.PodSandboxFilter{}
	if !all {
		sandboxFilter.State = &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	}
	sandboxes, err := m.runtimeService.ListPodSandbox(sandboxFilter)
	if err != nil {
		return nil, err
	}
	for i := range sandboxes {
		s := sandboxes[i]
		if s.Metadata == nil {
			continue
		}
		podUID := UID(s.Metadata.Uid)
		p, ok := pods[podUID]
		if !ok {
			p = &Pod{ID: podUID, Name: s.Metadata.Name, Namespace: s.Metadata.Namespace}
			pods[podUID] = p
		}
		p.Sandboxes = append(p.Sandboxes, m.sandboxToKubeContainer(s))
		p.CreatedAt = uint64(s.GetCreatedAt())
	}

	containerFilter := &runtimeapi.ContainerFilter{}
	if !all {
		containerFilter.State = &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	}
	containers, err := m.runtimeService.ListContainers(containerFilter)
	if err != nil {
		return nil, err
	}
	for i := range containers {
		c := containers[i]
		if c.Metadata == nil {
			continue
		}
		labelledInfo := getContainerInfoFromLabels(c.Labels)
		pod, found := pods[labelledInfo.PodUID]
		if !found {
			pod = &Pod{ID: labelledInfo.PodUID, Name: labelledInfo.PodName, Namespace: labelledInfo.PodNamespace}
			pods[labelledInfo.PodUID] = pod
		}
		pod.Containers = append(pod.Containers, m.toKubeContainer(c))
	}

	var result []*Pod
	for _, pod := range pods {
		result = append(result, pod)
	}
	sort.SliceStable(result, func(i, j int) bool { return result[i].CreatedAt > result[j].CreatedAt })
	return result, nil
}

func (m *runtimeManager) getSandboxIDByPodUID(uid UID) ([]string, error) {
	sandboxes, err := m.runtimeService.ListPodSandbox(&runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podUIDLabel: string(uid)},
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	ids := make([]string, len(sandboxes))
	for i, s := range sandboxes {
		ids[i] = s.Id
	}
	return ids, nil
}

func toKubeContainerStatus(status *runtimeapi.ContainerStatus, runtimeName string) *Status {
	annotatedInfo := getContainerInfoFromAnnotations(status.Annotations)
	labeledInfo := getContainerInfoFromLabels(status.Labels)
	cStatus := &Status{
		ID:           ContainerID{Type: runtimeName, ID: status.Id},
		Name:         labeledInfo.ContainerName,
		Image:        status.GetImage().GetImage(),
		ImageID:      status.ImageRef,
		Hash:         annotatedInfo.Hash,
		RestartCount: annotatedInfo.RestartCount,
		State:        toKubeContainerState(status.State),
		CreatedAt:    time.Unix(0, status.CreatedAt),
	}
	if status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		cStatus.StartedAt = time.Unix(0, status.StartedAt)
	}
	if status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		cStatus.Reason = status.Reason
		cStatus.Message = status.Message
		cStatus.ExitCode = int(status.ExitCode)
		cStatus.FinishedAt = time.Unix(0, status.FinishedAt)
	}
	return cStatus
}

func (m *runtimeManager) getPodContainerStatuses(uid UID) ([]*Status, error) {
	containers, err := m.runtimeService.ListContainers(&runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{podUIDLabel: string(uid)},
	})
	if err != nil {
		return nil, err
	}
	statuses := []*Status{}
	for _, c := range containers {
		resp, err := m.runtimeService.ContainerStatus(c.Id)
		if err != nil {
			return nil, err
		}
		if resp.Status == nil {
			return nil, fmt.Errorf("container status is nil")
		}
		statuses = append(statuses, toKubeContainerStatus(resp.Status, m.runtimeName))
	}
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].CreatedAt.After(statuses[j].CreatedAt) })
	return statuses, nil
}

func (m *runtimeManager) GetPodStatus(uid UID, name, namespace string) (*PodStatus, error) {
	podSandboxIDs, err := m.getSandboxIDByPodUID(uid)
	if err != nil {
		return nil, err
	}
	sandboxStatuses := []*runtimeapi.PodSandboxStatus{}
	podIPs := []string{}
	for idx, podSandboxID := range podSandboxIDs {
		resp, err := m.runtimeService.PodSandboxStatus(podSandboxID)
		if err != nil {
			return nil, err
		}
		if resp.Status == nil {
			return nil, fmt.Errorf("pod sandbox status is nil")
		}
		sandboxStatuses = append(sandboxStatuses, resp.Status)
		if idx == 0 && resp.Status.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			if ip := resp.Status.GetNetwork().GetIp(); ip != "" {
				podIPs = append(podIPs, ip)
			}
			for _, a := range resp.Status.GetNetwork().GetAdditionalIps() {
				podIPs = append(podIPs, a.GetIp())
			}
		}
	}
	containerStatuses, err := m.getPodContainerStatuses(uid)
	if err != nil {
		return nil, err
	}
	return &PodStatus{
		ID:                uid,
		Name:              name,
		Namespace:         namespace,
		IPs:               podIPs,
		SandboxStatuses:   sandboxStatuses,
		ContainerStatuses: containerStatuses,
	}, nil
}

// ---------------------------------------------------------------------------
// The pod cache (pkg/kubelet/container/cache.go), without subscribers

type cacheData struct {
	status   *PodStatus
	err      error
	modified time.Time
}

type podCache struct {
	lock      sync.RWMutex
	pods      map[UID]*cacheData
	timestamp *time.Time
}

func (c *podCache) Set(id UID, status *PodStatus, err error, timestamp time.Time) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.pods[id] = &cacheData{status: status, err: err, modified: timestamp}
}

func (c *podCache) Delete(id UID) {
	c.lock.Lock()
	defer c.lock.Unlock()
	delete(c.pods, id)
}

func (c *podCache) UpdateTime(timestamp time.Time) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.timestamp = &timestamp
}

// ---------------------------------------------------------------------------
// GenericPLEG (pkg/kubelet/pleg/generic.go)

type PodLifeCycleEventType string

const (
	ContainerStarted PodLifeCycleEventType = "ContainerStarted"
	ContainerDied    PodLifeCycleEventType = "ContainerDied"
	ContainerRemoved PodLifeCycleEventType = "ContainerRemoved"
	ContainerChanged PodLifeCycleEventType = "ContainerChanged"
)

type PodLifecycleEvent struct {
	ID   UID
	Type PodLifeCycleEventType
	Data interface{}
}

type plegContainerState string

const (
	plegContainerRunning     plegContainerState = "running"
	plegContainerExited      plegContainerState = "exited"
	plegContainerUnknown     plegContainerState = "unknown"
	plegContainerNonExistent plegContainerState = "non-existent"
)

func convertState(state State) plegContainerState {
	switch state {
	case ContainerStateCreated:
		return plegContainerUnknown
	case ContainerStateRunning:
		return plegContainerRunning
	case ContainerStateExited:
		return plegContainerExited
	}
	return plegContainerUnknown
}

type podRecord struct {
	old     *Pod
	current *Pod
}

type podRecords map[UID]*podRecord

func (pr podRecords) getOld(id UID) *Pod {
	r, ok := pr[id]
	if !ok {
		return nil
	}
	return r.old
}

func (pr podRecords) getCurrent(id UID) *Pod {
	r, ok := pr[id]
	if !ok {
		return nil
	}
	return r.current
}

func (pr podRecords) setCurrent(pods []*Pod) {
	for i := range pr {
		pr[i].current = nil
	}
	for _, pod := range pods {
		if r, ok := pr[pod.ID]; ok {
			r.current = pod
		} else {
			pr[pod.ID] = &podRecord{current: pod}
		}
	}
}

func (pr podRecords) update(id UID) {
	r, ok := pr[id]
	if !ok {
		return
	}
	if r.current == nil {
		delete(pr, id)
		return
	}
	r.old = r.current
	r.current = nil
}

type GenericPLEG struct {
	runtime         *runtimeManager
	eventChannel    chan *PodLifecycleEvent
	podRecords      podRecords
	relistTime      time.Time
	cache           *podCache
	podsToReinspect map[UID]*Pod
	runningPods     int
	runningCtrs     int
}

func generateEvents(podID UID, cid string, oldState, newState plegContainerState) []*PodLifecycleEvent {
	if newState == oldState {
		return nil
	}
	switch newState {
	case plegContainerRunning:
		return []*PodLifecycleEvent{{ID: podID, Type: ContainerStarted, Data: cid}}
	case plegContainerExited:
		return []*PodLifecycleEvent{{ID: podID, Type: ContainerDied, Data: cid}}
	case plegContainerUnknown:
		return []*PodLifecycleEvent{{ID: podID, Type: ContainerChanged, Data: cid}}
	case plegContainerNonExistent:
		switch oldState {
		case plegContainerExited:
			return []*PodLifecycleEvent{{ID: podID, Type: ContainerRemoved, Data: cid}}
		default:
			return []*PodLifecycleEvent{{ID: podID, Type: ContainerDied, Data: cid}, {ID: podID, Type: ContainerRemoved, Data: cid}}
		}
	}
	return nil
}

func getContainerState(pod *Pod, cid *ContainerID) plegContainerState {
	state := plegContainerNonExistent
	if pod == nil {
		return state
	}
	if c := pod.FindContainerByID(*cid); c != nil {
		return convertState(c.State)
	}
	if c := pod.FindSandboxByID(*cid); c != nil {
		return convertState(c.State)
	}
	return state
}

func computeEvents(oldPod, newPod *Pod, cid *ContainerID) []*PodLifecycleEvent {
	var pid UID
	if oldPod != nil {
		pid = oldPod.ID
	} else if newPod != nil {
		pid = newPod.ID
	}
	oldState := getContainerState(oldPod, cid)
	newState := getContainerState(newPod, cid)
	return generateEvents(pid, cid.ID, oldState, newState)
}

func getContainersFromPods(pods ...*Pod) []*Container {
	cidSet := map[string]struct{}{}
	var containers []*Container
	fillCidSet := func(cs []*Container) {
		for _, c := range cs {
			if _, ok := cidSet[c.ID.ID]; ok {
				continue
			}
			cidSet[c.ID.ID] = struct{}{}
			containers = append(containers, c)
		}
	}
	for _, p := range pods {
		if p == nil {
			continue
		}
		fillCidSet(p.Containers)
		fillCidSet(p.Sandboxes)
	}
	return containers
}

// updateRunningPodAndContainerMetrics: the gauges, counted as upstream does.
func (g *GenericPLEG) updateRunningPodAndContainerMetrics(pods []*Pod) {
	runningSandboxNum := 0
	containerStateCount := make(map[string]int)
	for _, pod := range pods {
		for _, c := range pod.Containers {
			containerStateCount[string(c.State)]++
		}
		for _, s := range pod.Sandboxes {
			if s.State == ContainerStateRunning {
				runningSandboxNum++
				break
			}
		}
	}
	g.runningPods = runningSandboxNum
	g.runningCtrs = containerStateCount[string(ContainerStateRunning)]
}

func (g *GenericPLEG) updateCache(pod *Pod, pid UID) (error, bool) {
	if pod == nil {
		g.cache.Delete(pid)
		return nil, true
	}
	timestamp := time.Now()
	status, err := g.runtime.GetPodStatus(pod.ID, pod.Name, pod.Namespace)
	g.cache.Set(pod.ID, status, err, timestamp)
	return err, true
}

func (g *GenericPLEG) Relist() {
	timestamp := time.Now()
	podList, err := g.runtime.GetPods(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "GenericPLEG: unable to retrieve pods:", err)
		return
	}
	g.relistTime = timestamp
	g.updateRunningPodAndContainerMetrics(podList)
	g.podRecords.setCurrent(podList)

	eventsByPodID := map[UID][]*PodLifecycleEvent{}
	for pid := range g.podRecords {
		oldPod := g.podRecords.getOld(pid)
		pod := g.podRecords.getCurrent(pid)
		allContainers := getContainersFromPods(oldPod, pod)
		for _, container := range allContainers {
			events := computeEvents(oldPod, pod, &container.ID)
			for _, e := range events {
				eventsByPodID[e.ID] = append(eventsByPodID[e.ID], e)
			}
		}
	}

	needsReinspection := make(map[UID]*Pod)
	for pid, events := range eventsByPodID {
		pod := g.podRecords.getCurrent(pid)
		if err, _ := g.updateCache(pod, pid); err != nil {
			needsReinspection[pid] = pod
			continue
		}
		delete(g.podsToReinspect, pid)
		g.podRecords.update(pid)
		for i := range events {
			if events[i].Type == ContainerChanged {
				continue
			}
			select {
			case g.eventChannel <- events[i]:
			default:
			}
		}
	}
	for pid, pod := range g.podsToReinspect {
		g.updateCache(pod, pid)
	}
	g.cache.UpdateTime(timestamp)
	g.podsToReinspect = needsReinspection
}

// ---------------------------------------------------------------------------
// The bench

// loadState reads one state file: records of three little-endian uint32
// lengths (method, key, bytes) followed by the three.
func loadState(path string) (map[string][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for len(data) > 0 {
		if len(data) < 12 {
			return nil, io.ErrUnexpectedEOF
		}
		lm := int(binary.LittleEndian.Uint32(data[0:]))
		lk := int(binary.LittleEndian.Uint32(data[4:]))
		lb := int(binary.LittleEndian.Uint32(data[8:]))
		data = data[12:]
		if len(data) < lm+lk+lb {
			return nil, io.ErrUnexpectedEOF
		}
		out[string(data[:lm])+"/"+string(data[lm:lm+lk])] = data[lm+lk : lm+lk+lb]
		data = data[lm+lk+lb:]
	}
	return out, nil
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []time.Duration) float64 {
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return float64(v[len(v)/2]) / 1e6
}

func main() {
	dir := flag.String("dir", "", "the directory bench_relist_pb --dump wrote")
	mem := flag.Bool("mem", false, "answer from messages decoded once per state (the in-memory fake) instead of unmarshalling the bytes on every call")
	flag.Parse()
	paths, _ := filepath.Glob(filepath.Join(*dir, "state-*.bin"))
	sort.Strings(paths)
	if len(paths) < 2 {
		fmt.Fprintln(os.Stderr, "go-relist: no states in", *dir)
		os.Exit(2)
	}
	states := make([]map[string][]byte, len(paths))
	for i, p := range paths {
		s, err := loadState(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-relist:", p, err)
			os.Exit(1)
		}
		states[i] = s
	}
	var svc runtimeService
	var apply func(s map[string][]byte)
	impl := "Go"
	if *mem {
		ms := &memRuntimeService{msgs: map[string]proto.Message{}}
		apply = func(s map[string][]byte) {
			for k, v := range s {
				method := k[:strings.IndexByte(k, '/')]
				m, err := decode(method, v)
				if err != nil {
					fmt.Fprintln(os.Stderr, "go-relist:", k, err)
					os.Exit(1)
				}
				ms.msgs[k] = m
			}
		}
		svc, impl = ms, "Go-mem"
	} else {
		bs := &fakeRuntimeService{responses: map[string][]byte{}}
		apply = func(s map[string][]byte) {
			for k, v := range s {
				bs.responses[k] = v
			}
		}
		svc = bs
	}
	g := &GenericPLEG{
		runtime:      &runtimeManager{runtimeName: "containerd", runtimeService: svc},
		eventChannel: make(chan *PodLifecycleEvent, 1<<16),
		podRecords:   make(podRecords),
		cache:        &podCache{pods: map[UID]*cacheData{}},
	}
	drain := func() int {
		n := 0
		for {
			select {
			case <-g.eventChannel:
				n++
			default:
				return n
			}
		}
	}
	timed := func() (time.Duration, int) {
		t := cpuNow()
		g.Relist()
		d := cpuNow() - t
		return d, drain()
	}
	apply(states[0])
	timed()
	timed()
	rounds := len(states) - 1
	nochange := make([]time.Duration, rounds)
	changed := make([]time.Duration, rounds)
	events := 0
	for i := 0; i < rounds; i++ {
		var n int
		nochange[i], n = timed()
		if n != 0 {
			fmt.Fprintln(os.Stderr, "go-relist: a no-change relist produced events")
			os.Exit(1)
		}
		apply(states[i+1])
		changed[i], n = timed()
		events += n
	}
	fmt.Printf("%-8d %-8s %14.3f %16.3f %14d\n", len(g.podRecords), impl, median(nochange),
		median(changed), events/rounds)
}
