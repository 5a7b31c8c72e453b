#!/bin/sh
# A worker for jobs of type place-order (veena worker --type place-order --
# testdata/work/place-order.sh): the job's variables come as JSON on stdin,
# the variables to set go as JSON to stdout; "_result" chooses the arc.
vars=$(cat)
case "$vars" in
  *'"item":"unobtainium"'*)
    echo '{"_result": "out-of-stock"}' ;;
  *)
    echo "{\"orderNumber\": \"PO-$$\", \"supplier\": \"$VEENA_HEADER_SUPPLIER\"}" ;;
esac
