package bpmn_test

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
)

// corpusDir holds public BPMN models (../shared/corpus/bpmn from the
// project root, never copied into the repository).
const corpusDir = "../../../shared/corpus/bpmn"

// corpus says, for every model of the corpus, what loading it gives: the
// definitions it loads as, or the refusal naming the construct Veena
// cannot run.
var corpus = []struct {
	file    string
	loads   []string
	refused string
}{
	{"lib-bpmn-engine/exclusive-gateway-multiple-tasks-no-default.bpmn", []string{"exclusive-gateway-multiple-tasks-no-default"}, ""},
	{"lib-bpmn-engine/exclusive-gateway-multiple-tasks.bpmn", []string{"exclusive-gateway-multiple-tasks"}, ""},
	{"lib-bpmn-engine/exclusive-gateway-with-condition-and-default.bpmn", []string{"exclusive-gateway-with-condition-and-default"}, ""},
	{"lib-bpmn-engine/exclusive-gateway-with-condition.bpmn", []string{"exclusive-gateway-with-condition"}, ""},
	{"lib-bpmn-engine/fork-controlled-exclusive-join.bpmn", []string{"fork-controlled-exclusive-join"}, ""},
	{"lib-bpmn-engine/fork-controlled-parallel-join.bpmn", []string{"fork-controlled-parallel-join"}, ""},
	{"lib-bpmn-engine/fork-uncontrolled-join.bpmn", []string{"fork-uncontrolled-join"}, ""},
	{"lib-bpmn-engine/forked-flow.bpmn", []string{"Simple_Task_Process"}, ""},
	{"lib-bpmn-engine/inclusive-gateway-multiple-tasks.bpmn", []string{"inclusive-gateway-multiple-tasks"}, ""},
	{"lib-bpmn-engine/inclusive-gateway-with-condition-and-default.bpmn", []string{"exclusive-gateway-with-condition-and-default"}, ""},
	{"lib-bpmn-engine/inclusive-gateway-with-condition.bpmn", []string{"exclusive-gateway-with-condition"}, ""},
	{"lib-bpmn-engine/message-EventBasedGateway.bpmn", []string{"message-EventBasedGateway"}, ""},
	{"lib-bpmn-engine/message-intermediate-catch-event-and-parallel-tasks.bpmn", []string{"message-intermediate-catch-event-and-parallel-tasks"}, ""},
	{"lib-bpmn-engine/message-intermediate-catch-event.bpmn", []string{"message-intermediate-catch-event"}, ""},
	{"lib-bpmn-engine/message-intermediate-invalid-timer-event.bpmn", nil, "<intermediateCatchEvent id=\"Event_1uc8qla\">: a timer event needs a timeDate, timeDuration or timeCycle"},
	{"lib-bpmn-engine/message-intermediate-timer-event-expression.bpmn", []string{"message-intermediate-timer-event"}, ""},
	{"lib-bpmn-engine/message-intermediate-timer-event-invalid-expression.bpmn", []string{"message-intermediate-timer-event"}, ""},
	{"lib-bpmn-engine/message-intermediate-timer-event.bpmn", []string{"message-intermediate-timer-event"}, ""},
	{"lib-bpmn-engine/message-multiple-intermediate-catch-events-exclusive.bpmn", []string{"message-multiple-intermediate-catch-events-exclusive"}, ""},
	{"lib-bpmn-engine/message-multiple-intermediate-catch-events-merged.bpmn", []string{"message-multiple-intermediate-catch-events-merged"}, ""},
	{"lib-bpmn-engine/message-multiple-intermediate-catch-events-parallel.bpmn", []string{"message-multiple-intermediate-catch-events-parallel"}, ""},
	{"lib-bpmn-engine/message-multiple-intermediate-catch-events.bpmn", []string{"message-multiple-intermediate-catch-events"}, ""},
	{"lib-bpmn-engine/parallel-gateway-flow.bpmn", []string{"Simple_Task_Process"}, ""},
	{"lib-bpmn-engine/service-task-input-output.bpmn", []string{"service-task-input-output"}, ""},
	{"lib-bpmn-engine/service-task-invalid-input.bpmn", nil, "feel expression \"=iban: \\\"DE456\\\"\": unexpected \":\""},
	{"lib-bpmn-engine/service-task-invalid-output.bpmn", nil, "feel expression \"=iban: \\\"DE456\\\"\": unexpected \":\""},
	{"lib-bpmn-engine/simple-count-loop-with-message.bpmn", []string{"simple-count-loop-with-message"}, ""},
	{"lib-bpmn-engine/simple-count-loop.bpmn", []string{"simple-count-loop"}, ""},
	{"lib-bpmn-engine/simple-intermediate-message-catch-event-broken.bpmn", []string{"simple-intermediate-message-catch-event-broken"}, ""},
	{"lib-bpmn-engine/simple-intermediate-message-catch-event.bpmn", []string{"simple-intermediate-message-catch-event"}, ""},
	{"lib-bpmn-engine/simple-link-event-broken.bpmn", nil, "<intermediateThrowEvent id=\"Link-A-Throw\">: no link catch event named \"Link-A\" in its scope"},
	{"lib-bpmn-engine/simple-link-event-output-variables.bpmn", []string{"simple-link-event-output-variables"}, ""},
	{"lib-bpmn-engine/simple-link-events.bpmn", []string{"simple-link-events"}, ""},
	{"lib-bpmn-engine/simple-task-with-type.bpmn", []string{"simple-task-with-type"}, ""},
	{"lib-bpmn-engine/simple-user-task.bpmn", []string{"simple-user-task"}, ""},
	{"lib-bpmn-engine/simple_task-no_output_mapping.bpmn", []string{"simple_task-no_output_mapping"}, ""},
	{"lib-bpmn-engine/simple_task-with_output_mapping.bpmn", []string{"simple_task-with_output_mapping"}, ""},
	{"lib-bpmn-engine/simple_task.bpmn", []string{"Simple_Task_Process"}, ""},
	{"lib-bpmn-engine/simple_task_modified_taskId.bpmn", []string{"Simple_Task_Process"}, ""},
	{"lib-bpmn-engine/simple_task_v2.bpmn", []string{"Simple_Task_Process"}, ""},
	{"lib-bpmn-engine/subprocess-fork-controlled-exclusive-join.bpmn", []string{"fork-controlled-exclusive-join"}, ""},
	{"lib-bpmn-engine/subprocess-fork-controlled-parallel-join.bpmn", []string{"fork-controlled-exclusive-join"}, ""},
	{"lib-bpmn-engine/subprocess-message-multiple-intermediate-catch-events-exclusive.bpmn", []string{"message-multiple-intermediate-catch-events-exclusive"}, ""},
	{"lib-bpmn-engine/subprocess-simple-link-events.bpmn", []string{"simple-link-events"}, ""},
	{"lib-bpmn-engine/subprocess-with-gateways.bpmn", []string{"Process_0gjrx3e"}, ""},
	{"lib-bpmn-engine/subprocess.bpmn", []string{"Process_0gjrx3e"}, ""},
	{"lib-bpmn-engine/user-tasks-with-assignments.bpmn", []string{"user-tasks-with-assignments"}, ""},
	{"lib-bpmn-engine/user-tasks-with-parallel-gateways.bpmn", []string{"user-tasks-with-assignments"}, ""},
	{"marklogicworkflow/bpmn2/001_two_sample_transitions.bpmn", []string{"two_sample_transitions"}, ""},
	{"marklogicworkflow/bpmn2/002_data_basic.bpmn", []string{"data_basic"}, ""},
	{"marklogicworkflow/bpmn2/011_gateways_test.bpmn", []string{"gateways_test"}, ""},
	{"marklogicworkflow/bpmn2/015-restapi-tests.bpmn", []string{"restapitests"}, ""},
	{"marklogicworkflow/bpmn2/021-initiating-attachment.bpmn", []string{"InitiatingAttachment"}, ""},
	{"marklogicworkflow/bpmn2/022-email-test.bpmn", []string{"EmailTest"}, ""},
	{"marklogicworkflow/bpmn2/051_domain.bpmn", []string{"domain"}, ""},
	{"marklogicworkflow/bpmn2/052_referenced_document_content.bpmn", []string{"referenced_document_content"}, ""},
	{"marklogicworkflow/bpmn2/053_referenced_document_properties.bpmn", []string{"referenced_document_properties"}, ""},
	{"marklogicworkflow/bpmn2/060-attachments.bpmn2", []string{"060-attachments"}, ""},
	{"marklogicworkflow/bpmn2/InclusiveGatewayTest-01.bpmn2", []string{"Process_1"}, ""},
	{"marklogicworkflow/bpmn2/InclusiveGatewayTest-02.bpmn", []string{"Process_1"}, ""},
	{"marklogicworkflow/bpmn2/fork-conditional.bpmn2", []string{"fork-conditional"}, ""},
	{"marklogicworkflow/bpmn2/fork-simple.bpmn2", []string{"fork-simple"}, ""},
	{"marklogicworkflow/bpmn2/fork-within-fork.bpmn2", []string{"fork-within-fork"}, ""},
	{"marklogicworkflow/bpmn2/jBPMExample.bpmn2", nil, "<callActivity id=\"CallActivity_1\">: a call activity needs a calledElement (the id of the process it calls)"},
	{"marklogicworkflow/bpmn2/np1.bpmn2", []string{"np1"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/Collapsed SubProcess.bpmn", []string{"_6"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/CorrelationExampleSeller.bpmn", nil, "xpath expression \"Quote available and okay.\": boolean(Quote available and okay.) has an invalid token"},
	{"marklogicworkflow/bpmn2omg-advanced/Email Voting 2.bpmn", nil, "<startEvent id=\"_6-53\">: a timer with an empty timeDate"},
	{"marklogicworkflow/bpmn2omg-advanced/Expanded SubProcess.bpmn", []string{"_6"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/Laneset.bpmn", []string{"_6-1"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/Pool.bpmn", []string{"_6-1"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/Process.bpmn", []string{"_6"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/Procurement Processes with Error Handling - Stencil Trisotech 3 pages.bpmn", nil, "<startEvent id=\"_1-2\">: conditional events are not supported"},
	{"marklogicworkflow/bpmn2omg-advanced/Tavel Booking.bpmn", nil, "<intermediateCatchEvent id=\"_6-439\">: a timer with an empty timeDate"},
	{"marklogicworkflow/bpmn2omg-advanced/triso - Hardware Retailer v2.bpmn", []string{"_6-1"}, ""},
	{"marklogicworkflow/bpmn2omg-advanced/triso - Order Process for Pizza V4.bpmn", nil, "<intermediateCatchEvent id=\"_6-219\">: a timer with an empty timeDate"},
	{"marklogicworkflow/bpmn2omg-basic/Incident Management level 1.bpmn", []string{"_6-1"}, ""},
	{"marklogicworkflow/bpmn2omg-basic/Incident Management(Account Manager Only).bpmn", []string{"WFP-0-2"}, ""},
	{"marklogicworkflow/bpmn2omg-basic/Incident Management(Process Engine Only).bpmn", []string{"WFP-1-1"}, ""},
	{"marklogicworkflow/bpmn2omg-extended/Call Activity.bpmn", []string{"_6", "_0"}, ""},
	{"marklogicworkflow/bpmn2omg-extended/Nobel Prize Process.bpmn", nil, "<startEvent id=\"_6-84\">: a timer with an empty timeDate"},
	{"miwg/A.1.0.bpmn", []string{"WFP-6-"}, ""},
	{"miwg/A.2.0.bpmn", []string{"WFP-6-"}, ""},
	{"miwg/A.2.1.bpmn", []string{"_To9ZoTOCEeSknpIVFCxNIQ"}, ""},
	{"miwg/A.3.0.bpmn", []string{"WFP-6-"}, ""},
	{"miwg/A.4.0.bpmn", []string{"WFP-6-1", "WFP-6-2"}, ""},
	{"miwg/A.4.1.bpmn", []string{"sid-34746A54-1D7D-46CA-B219-0C4CEAE51170", "sid-54D696FD-DEDC-45F3-99DB-1404DA433FC4"}, ""},
	{"miwg/B.1.0.bpmn", nil, "<startEvent id=\"_e314751e-5c3a-41f2-a1ae-4cb99efa0916\">: a timer with an empty timeDate"},
	{"miwg/B.2.0.bpmn", nil, "<startEvent id=\"_cba8fbed-2bb6-40a9-8ac5-83e827ce9d9f\">: conditional events are not supported"},
	{"miwg/C.1.0.bpmn", nil, "<intermediateCatchEvent id=\"sid-0E349B8B-14A7-4565-988A-38F3A9B624D2\">: a timer event needs a timeDate, timeDuration or timeCycle"},
	{"miwg/C.1.1.bpmn", []string{"handle-invoice"}, ""},
	{"miwg/C.2.0.bpmn", []string{"WFP-Page_1-1", "WFP-Page_1-2", "WFP-Page_1-3", "WFP-Page_1-4"}, ""},
	{"miwg/C.3.0.bpmn", nil, "xpath expression \"Service Level == 'Premium'\": boolean(Service Level == 'Premium') has an invalid token"},
	{"miwg/C.4.0.bpmn", nil, "<manualTask id=\"_788443d9-65f0-43a4-96a8-63e8d6f380a7\">: a standard loop needs a loopCondition or a loopMaximum, or it never ends"},
	{"miwg/C.5.0.bpmn", []string{"_3d1ef204-2d4c-4643-8fc5-c319cc032ec0", "_774bc005-0917-43d5-ab70-0f9fe123fbd1"}, ""},
	{"miwg/C.6.0.bpmn", nil, "<intermediateCatchEvent id=\"_87baeef0-f32e-4a93-b802-fdd588aaf729\">: a timer with an empty timeDate"},
	{"miwg/C.7.0.bpmn", nil, "<serviceTask id=\"_a36ddf2f-23c1-46c5-86d4-bd2a0eb42535\">: a multi-instance activity needs a loopCardinality or an input collection"},
	{"miwg/C.8.0.bpmn", []string{"VacationRequestProcess"}, ""},
	{"miwg/C.8.1.bpmn", []string{"VacationRequestProcess"}, ""},
	{"miwg/C.9.0.bpmn", nil, "<businessRuleTask id=\"BusinessRuleTask_CheckApplicationAutomatically\">: DMN decisions (zeebe:calledDecision) are not supported; give the task a zeebe:taskDefinition to run it as a job"},
	{"miwg/C.9.1.bpmn", []string{"requestDocument_en"}, ""},
	{"miwg/C.9.2.bpmn", []string{"ManualCheck"}, ""},
}

func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("the corpus is not here (%v): skipped", err)
	}
	var files []string
	_ = filepath.Walk(corpusDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".bpmn") || strings.HasSuffix(p, ".bpmn2")) {
			rel, _ := filepath.Rel(corpusDir, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	var listed []string
	loaded, refused := 0, 0
	for _, c := range corpus {
		listed = append(listed, c.file)
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(corpusDir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			gs, err := bpmn.Load(filepath.Base(c.file), src)
			if c.refused != "" {
				refused++
				var le *graph.LoadError
				if !errors.As(err, &le) {
					t.Fatalf("loads (%v), want it refused with %q", err, c.refused)
				}
				if le.Problems[0].Message != c.refused || le.Problems[0].Line == 0 {
					t.Fatalf("refused with %v, want %q at a line", le.Problems[0], c.refused)
				}
				return
			}
			loaded++
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			var names []string
			for _, g := range gs {
				names = append(names, g.Name)
			}
			if diff := cmp.Diff(c.loads, names); diff != "" {
				t.Errorf("definitions (-want +got):\n%s", diff)
			}
		})
	}
	sort.Strings(listed)
	if diff := cmp.Diff(files, listed); diff != "" {
		t.Errorf("the table does not list the corpus (-corpus +table):\n%s", diff)
	}
	t.Logf("%d models: %d load, %d refused", len(corpus), loaded, refused)
}
