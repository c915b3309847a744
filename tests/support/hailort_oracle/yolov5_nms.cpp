// HailoRT's YOLOv5 NMS post-process op (hailort: libhailort/src/net_flow/ops/yolov5_post_process.cpp), the one
// a HEF compiled with nms_postprocess(meta_arch=yolov5) runs on the host, driven from the oracle tests
// (tests/backends/test_hailort_oracle.py). Built and linked as yolov8_nms.cpp is. One frame per request on stdin:
//
//   request: "CLASSES MAX_PER_CLASS SCORE_TH IOU_TH IMAGE_H IMAGE_W TYPE NSTRIDES\n", then per stride
//            "NANCHORS W0 H0 W1 H1 ...\n" (anchors in input pixels) and its one anchored head,
//            "H W C PH PW PC ZP SCALE MIN MAX NBYTES\n" + NBYTES bytes (the device frame, NHCW)
//   answer:  "STATUS NBYTES\n" + the HAILO_NMS_BY_CLASS float32 buffer (STATUS: hailo_status, 0 = success)
#include "net_flow/ops/yolov5_post_process.hpp"
#include "driver_io.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace hailort;
using namespace hailort::net_flow;

int main()
{
    std::ios::sync_with_stdio(false);
    uint32_t classes, max_per_class, type, nstrides;
    double score_th, iou_th;
    float image_h, image_w;
    while (std::cin >> classes >> max_per_class >> score_th >> iou_th >> image_h >> image_w >> type >> nstrides) {
        std::unordered_map<std::string, BufferMetaData> inputs_metadata;
        std::vector<std::vector<uint8_t>> frames(nstrides);
        YoloPostProcessConfig yolov5_config{};
        yolov5_config.image_height = image_h;
        yolov5_config.image_width = image_w;
        for (uint32_t i = 0; i < nstrides; i++) {
            uint32_t nanchors;
            std::cin >> nanchors;
            std::vector<int> anchors(2 * nanchors);
            for (auto &value : anchors) {
                std::cin >> value;
            }
            const auto name = "head" + std::to_string(i);
            inputs_metadata[name] = read_head(static_cast<hailo_format_type_t>(type), frames[i]);
            yolov5_config.anchors[name] = anchors;
        }
        BufferMetaData output{};
        output.format = hailo_format_t{HAILO_FORMAT_TYPE_FLOAT32, HAILO_FORMAT_ORDER_HAILO_NMS_BY_CLASS, HAILO_FORMAT_FLAGS_NONE};
        const NmsPostProcessConfig nms_config(score_th, iou_th, max_per_class, max_per_class * classes, classes);
        std::vector<uint8_t> buffer(classes * (1 + 5 * max_per_class) * sizeof(float), 0);
        auto metadata = Yolov5OpMetadata::create(inputs_metadata, {{"nms", output}}, nms_config, yolov5_config, "net");
        hailo_status status = metadata.status();
        if (HAILO_SUCCESS == status) {
            auto op = YOLOv5PostProcessOp::create(std::static_pointer_cast<Yolov5OpMetadata>(metadata.value()));
            status = op.status();
            if (HAILO_SUCCESS == status) {
                std::map<std::string, MemoryView> inputs, outputs{{"nms", MemoryView(buffer.data(), buffer.size())}};
                for (uint32_t i = 0; i < nstrides; i++) {
                    inputs["head" + std::to_string(i)] = MemoryView(frames[i].data(), frames[i].size());
                }
                status = op.value()->execute(inputs, outputs);
            }
        }
        write_answer(status, buffer);
    }
    return 0;
}
