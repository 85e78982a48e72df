from ppaux.testing import check_observer
from ppaux.examples.topk_logprobs import TopKLogprobsObserver, outputs
def test_pp_relay(): check_observer(TopKLogprobsObserver, outputs())
